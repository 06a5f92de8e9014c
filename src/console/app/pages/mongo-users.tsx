import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Instance, MongoRole, MongoUser } from '../../../client/index.js';
import { MONGODB_ROLES } from '../../../domain/catalog.js';
import { MutationStatus, formErrors, useMutation } from '../components/mutation.js';
import { Busy, Confirm, ErrorBox, Field } from '../components/ui.js';

/** The labels of the add form's fields, by their API names. */
const USER_LABELS = { username: 'User name', password: 'Password', roles: 'Roles' };
import { api } from '../session.js';

/**
 * MongoDB users of one database: list, add, change password or roles, drop. Saving roles sends
 * the whole list, which replaces the user's roles (the API's semantics), and the page says so.
 */
export function MongoUsersTab({ instance }: { instance: Instance }) {
  const [db, setDb] = useState('admin');
  const [shownDb, setShownDb] = useState('admin');
  const [users, setUsers] = useState<MongoUser[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const m = useMutation();
  const [drop, setDrop] = useState<string | undefined>();
  const id = instance.id;

  const load = useCallback(
    async (database: string) => {
      setUsers(undefined);
      setLoadError(undefined);
      try {
        setUsers(await api((c) => c.listMongoUsers(id, database)));
        setShownDb(database);
      } catch (err) {
        setLoadError(err);
      }
    },
    [id],
  );
  useEffect(() => void load('admin'), [load]);

  const run = (what: string, done: string, call: () => Promise<unknown>) =>
    m.run(
      what,
      async () => {
        await call();
        return done;
      },
      () => load(shownDb),
    );
  const busy = m.busy;
  const errors = formErrors(m.error, USER_LABELS);

  return (
    <section aria-labelledby="users-title">
      <h2 id="users-title">Database users</h2>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void load(db.trim());
        }}
      >
        <Field label="Database">
          {({ id: fid, describedBy }) => (
            <input id={fid} name="database" value={db} onInput={(e) => setDb(e.currentTarget.value)} aria-describedby={describedBy} />
          )}
        </Field>
        <button type="submit">Show users</button>
      </form>
      <ErrorBox error={loadError} title="The users could not be read" />
      {users === undefined && !loadError ? <Busy>Loading users…</Busy> : null}
      {users && users.length === 0 ? <p class="empty">No user in database {shownDb}.</p> : null}
      {users && users.length > 0 ? (
        <ul class="users">
          {users.map((u) => (
            <li key={u.name}>
              <UserEditor
                user={u}
                db={shownDb}
                disabled={busy !== undefined}
                onPassword={(password) =>
                  run(`Changing the password of ${u.name}…`, `The password of ${u.name} is changed.`, () =>
                    api((c) => c.updateMongoUser(id, shownDb, u.name, { password })),
                  )
                }
                onRoles={(roles) =>
                  run(`Replacing the roles of ${u.name}…`, `${u.name} now has exactly ${roles.length} role(s).`, () =>
                    api((c) => c.updateMongoUser(id, shownDb, u.name, { roles })),
                  )
                }
                onDrop={() => setDrop(u.name)}
              />
            </li>
          ))}
        </ul>
      ) : null}
      <AddUser
        key={shownDb}
        db={shownDb}
        disabled={busy !== undefined}
        fieldError={errors.of}
        onAdd={(username, password, roles) =>
          run(`Adding ${username}…`, `${username} is added to ${shownDb}.`, () =>
            api((c) => c.createMongoUser(id, shownDb, { username, password, roles })),
          )
        }
      />
      <MutationStatus mutation={m} error={errors.general} />
      {drop ? (
        <Confirm
          title={`Drop user ${drop}?`}
          confirmLabel={`Drop ${drop}`}
          onCancel={() => setDrop(undefined)}
          onConfirm={() => {
            const who = drop;
            setDrop(undefined);
            void run(`Dropping ${who}…`, `${who} is dropped from ${shownDb}.`, () => api((c) => c.deleteMongoUser(id, shownDb, who)));
          }}
        >
          <p>
            Clients logging in as {drop} on {shownDb} will be refused.
          </p>
        </Confirm>
      ) : null}
    </section>
  );
}

function RolesEditor({ roles, db, onChange }: { roles: MongoRole[]; db: string; onChange: (r: MongoRole[]) => void }) {
  return (
    <fieldset class="roles">
      <legend>Roles</legend>
      {roles.length === 0 ? <p class="hint">No role: the user can log in and do nothing.</p> : null}
      {roles.map((r, i) => (
        <div class="role-row" key={i}>
          <label>
            Role
            <select value={r.role} onChange={(e) => onChange(roles.map((x, j) => (j === i ? { ...x, role: e.currentTarget.value } : x)))}>
              {MONGODB_ROLES.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          <label>
            on database
            <input value={r.db} onInput={(e) => onChange(roles.map((x, j) => (j === i ? { ...x, db: e.currentTarget.value } : x)))} />
          </label>
          <button type="button" class="small" onClick={() => onChange(roles.filter((_, j) => j !== i))}>
            Remove <span class="visually-hidden">role {r.role}</span>
          </button>
        </div>
      ))}
      <button type="button" class="small" onClick={() => onChange([...roles, { role: 'read', db }])}>
        Add a role
      </button>
    </fieldset>
  );
}

interface EditorProps {
  readonly user: MongoUser;
  readonly db: string;
  readonly disabled: boolean;
  readonly onPassword: (p: string) => Promise<boolean>;
  readonly onRoles: (r: MongoRole[]) => Promise<boolean>;
  readonly onDrop: () => void;
}

function UserEditor({ user, db, disabled, onPassword, onRoles, onDrop }: EditorProps) {
  const [roles, setRoles] = useState<MongoRole[]>(user.roles);
  const [password, setPassword] = useState('');
  useEffect(() => setRoles(user.roles), [user]);
  const changed = JSON.stringify(roles) !== JSON.stringify(user.roles);
  return (
    <article aria-label={`User ${user.name}`}>
      <h3>{user.name}</h3>
      <p class="hint">Now: {user.roles.length === 0 ? 'no role' : user.roles.map((r) => `${r.role}@${r.db}`).join(', ')}</p>
      <RolesEditor roles={roles} db={db} onChange={setRoles} />
      <p class="hint">Saving replaces the whole role list: a role removed here is revoked.</p>
      <div class="actions">
        <button type="button" disabled={disabled || !changed} onClick={() => void onRoles(roles)}>
          Replace roles
        </button>
      </div>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void onPassword(password).then((ok) => ok && setPassword(''));
        }}
      >
        <Field label={`New password for ${user.name}`} hint="8 to 256 characters.">
          {({ id, describedBy }) => (
            <input
              id={id}
              type="password"
              autocomplete="new-password"
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
              aria-describedby={describedBy}
            />
          )}
        </Field>
        <button type="submit" disabled={disabled || password.length === 0}>
          Change password
        </button>
      </form>
      <button type="button" class="danger small" disabled={disabled} onClick={onDrop}>
        Drop {user.name}
      </button>
    </article>
  );
}

function AddUser({
  db,
  disabled,
  fieldError,
  onAdd,
}: {
  db: string;
  disabled: boolean;
  fieldError: (field: string) => string | undefined;
  onAdd: (u: string, p: string, r: MongoRole[]) => Promise<boolean>;
}) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [roles, setRoles] = useState<MongoRole[]>([{ role: 'readWrite', db }]);
  return (
    <form
      class="add-user"
      onSubmit={(e) => {
        e.preventDefault();
        void onAdd(username.trim(), password, roles).then((ok) => {
          if (ok) {
            setUsername('');
            setPassword('');
          }
        });
      }}
      noValidate
    >
      <h3>Add a user to {db}</h3>
      <Field label={USER_LABELS.username} error={fieldError('username')}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            name="username"
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
            aria-describedby={describedBy}
            aria-invalid={invalid}
          />
        )}
      </Field>
      <Field label={USER_LABELS.password} error={fieldError('password')} hint="8 to 256 characters; hangar never shows it again.">
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            name="user_password"
            type="password"
            autocomplete="new-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            aria-describedby={describedBy}
            aria-invalid={invalid}
          />
        )}
      </Field>
      <RolesEditor roles={roles} db={db} onChange={setRoles} />
      {fieldError('roles') ? <p class="field-error">{fieldError('roles')}</p> : null}
      <button type="submit" class="primary" disabled={disabled || username.trim() === '' || password === ''}>
        Add user
      </button>
    </form>
  );
}
