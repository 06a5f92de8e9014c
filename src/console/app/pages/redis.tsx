import { useCallback, useEffect, useState } from 'preact/hooks';
import { HangarApiError, type Instance, type RedisConfig, type RedisUser } from '../../../client/index.js';
import { MutationStatus, formErrors, useMutation } from '../components/mutation.js';
import { Busy, Confirm, CopyValue, ErrorBox, Field } from '../components/ui.js';
import { fieldMessage, formatUtc } from '../format.js';
import { api } from '../session.js';

const USER_LABELS = { username: 'User name', password: 'Password', keys: 'Keys', channels: 'Channels', commands: 'Commands' };

/** Patterns as typed: separated by spaces or commas. */
const words = (s: string): string[] => s.split(/[\s,]+/).filter(Boolean);

/** A password shown once: after a create or a rotation. */
interface Secret {
  readonly user: string;
  readonly password: string;
  readonly until?: string;
}

/**
 * The application users of an instance with the Redis routes (Redis ACL users): list, add (the
 * password shown once), rotate a password (the old one works until it is finished or expires),
 * delete after asking.
 */
export function RedisUsersTab({ instance }: { instance: Instance }) {
  const name = instance.name;
  const [users, setUsers] = useState<RedisUser[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [secret, setSecret] = useState<Secret | undefined>();
  const [form, setForm] = useState({ username: '', password: '', keys: '', channels: '', commands: '' });
  const [confirm, setConfirm] = useState<{ user: RedisUser; what: 'delete' | 'rotate' } | undefined>();
  const m = useMutation();

  const load = useCallback(async () => {
    try {
      setUsers(await api((c) => c.listRedisUsers(name)));
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  }, [name]);
  useEffect(() => void load(), [load]);

  const create = (e: Event) => {
    e.preventDefault();
    const username = form.username.trim();
    void m.run(
      `Adding ${username}…`,
      async () => {
        const created = await api((c) =>
          c.createRedisUser(name, {
            username,
            ...(form.password ? { password: form.password } : {}),
            keys: words(form.keys),
            channels: words(form.channels),
            commands: words(form.commands),
          }),
        );
        setSecret({ user: created.user.name, password: created.password });
        setForm({ username: '', password: '', keys: '', channels: '', commands: '' });
        return `${created.user.name} is added: clients log in with AUTH ${created.user.name} and its password.`;
      },
      load,
    );
  };

  const rotate = (u: RedisUser) => {
    setConfirm(undefined);
    void m.run(
      `Making a new password for ${u.name}…`,
      async () => {
        const r = await api((c) => c.rotateRedisUserPassword(name, u.name));
        setSecret({ user: u.name, password: r.password, until: r.previous_valid_until });
        return undefined;
      },
      load,
    );
  };

  const finish = (u: RedisUser) =>
    void m.run(
      `Retiring the old password of ${u.name}…`,
      async () => {
        await api((c) => c.finishRedisUserPasswordRotation(name, u.name));
        if (secret?.user === u.name) setSecret({ ...secret, until: undefined });
        return `The old password of ${u.name} no longer works.`;
      },
      load,
    );

  const remove = (u: RedisUser) => {
    setConfirm(undefined);
    void m.run(
      `Deleting ${u.name}…`,
      async () => {
        await api((c) => c.deleteRedisUser(name, u.name));
        if (secret?.user === u.name) setSecret(undefined);
        return `${u.name} is deleted; its open connections were closed.`;
      },
      load,
    );
  };

  const errors = formErrors(m.error, USER_LABELS);
  const busy = m.busy !== undefined;
  const field = (k: keyof typeof form, hint: string, secret = false) => (
    <Field label={USER_LABELS[k]} error={errors.of(k)} hint={hint}>
      {({ id, describedBy, invalid }) => {
        const props = {
          id,
          name: secret ? 'user_password' : k,
          value: form[k],
          onInput: (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value }),
          'aria-describedby': describedBy,
          'aria-invalid': invalid,
        };
        return secret ? <input {...props} type="password" autocomplete="new-password" /> : <input {...props} autocomplete="off" />;
      }}
    </Field>
  );

  return (
    <section aria-labelledby="redis-users-title">
      <h2 id="redis-users-title">Users</h2>
      <p class="hint">
        Users of the application, besides the instance password: each logs in with AUTH user password and may use only its keys, channels
        and commands.
      </p>
      {secret ? (
        // biome-ignore lint/a11y/useSemanticElements: a named region (the role a <section> has), which the console's tests find by role and name
        <div class="secret-box" role="region" aria-label="New password">
          <h3>Password of {secret.user}</h3>
          <p>
            <strong>Copy the password now: it is shown this once.</strong>
            {secret.until ? ` The old password works too until ${secret.until}, while your clients switch.` : ''}
          </p>
          <dl class="connect">
            <CopyValue label="Password" value={secret.password} />
          </dl>
          <button type="button" onClick={() => setSecret(undefined)}>
            I have copied it
          </button>
        </div>
      ) : null}
      <ErrorBox error={loadError} title="The users could not be read" />
      {users === undefined && !loadError ? <Busy>Loading users…</Busy> : null}
      {users && users.length === 0 ? <p class="empty">No user yet: clients log in with the instance password.</p> : null}
      {users && users.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="Users" tabIndex={0}>
          <table class="cards">
            <thead>
              <tr>
                <th scope="col">User</th>
                <th scope="col">Keys</th>
                <th scope="col">Channels</th>
                <th scope="col">Commands</th>
                <th scope="col">Added (UTC)</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => (
                <tr key={u.name} data-user={u.name}>
                  <th scope="row">
                    <code>{u.name}</code>
                  </th>
                  <td data-label="Keys">{u.keys.join(' ') || 'none'}</td>
                  <td data-label="Channels">{u.channels.join(' ') || 'none'}</td>
                  <td data-label="Commands">{u.commands.join(' ') || 'none'}</td>
                  <td data-label="Added">{formatUtc(u.date_created.$date)}</td>
                  <td>
                    <div class="row-buttons">
                      {u.previous_password_valid_until ? (
                        <button type="button" class="small" onClick={() => finish(u)} disabled={busy}>
                          Retire old password <span class="visually-hidden">of {u.name}</span>
                        </button>
                      ) : (
                        <button type="button" class="small" onClick={() => setConfirm({ user: u, what: 'rotate' })} disabled={busy}>
                          Rotate password <span class="visually-hidden">of {u.name}</span>
                        </button>
                      )}
                      <button type="button" class="small danger" onClick={() => setConfirm({ user: u, what: 'delete' })} disabled={busy}>
                        Delete <span class="visually-hidden">user {u.name}</span>
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}

      <form class="add-redis-user" onSubmit={create} noValidate aria-labelledby="add-redis-user-title">
        <h3 id="add-redis-user-title">Add a user</h3>
        {field('username', '1 to 64 letters, digits, _, . or -.')}
        {field('password', 'Empty: hangar makes one. Shown once either way.', true)}
        {field('keys', 'Key patterns, separated by spaces: app:* sessions:*. None: no key.')}
        {field('channels', 'Pub/Sub channel patterns, separated by spaces. None: no channel.')}
        {field('commands', 'Rules in order: +@read +@write -@dangerous +get. None: no command.')}
        <button type="submit" class="primary" disabled={busy || form.username.trim() === ''}>
          Add user
        </button>
      </form>
      <MutationStatus mutation={m} error={errors.general} />
      {confirm?.what === 'delete' ? (
        <Confirm
          title={`Delete user ${confirm.user.name}?`}
          confirmLabel={`Delete ${confirm.user.name}`}
          onConfirm={() => remove(confirm.user)}
          onCancel={() => setConfirm(undefined)}
        >
          <p>Clients logging in as {confirm.user.name} are refused, and its open connections are closed.</p>
        </Confirm>
      ) : null}
      {confirm?.what === 'rotate' ? (
        <Confirm
          title={`Make a new password for ${confirm.user.name}?`}
          confirmLabel="Rotate password"
          onConfirm={() => rotate(confirm.user)}
          onCancel={() => setConfirm(undefined)}
        >
          <p>The new password is shown once. The old one keeps working for a while, so that clients can switch, or until you retire it.</p>
        </Confirm>
      ) : null}
    </section>
  );
}

/**
 * The settings of the instance that hangar lets tenants change (the allow-list of GET
 * /v2/redis/{name}/config/, as the primary runs them): edited live on the primary and the
 * replica, only those changed sent. A refused value is shown next to its setting with the values
 * it takes.
 */
export function RedisConfigTab({ instance }: { instance: Instance }) {
  const name = instance.name;
  const [config, setConfig] = useState<RedisConfig | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [edits, setEdits] = useState<Record<string, string>>({});
  const m = useMutation();

  const load = useCallback(async () => {
    try {
      setConfig(await api((c) => c.redisConfig(name)));
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  }, [name]);
  useEffect(() => void load(), [load]);

  const changed = Object.fromEntries(Object.entries(edits).filter(([k, v]) => config?.[k] !== v));
  const submit = (e: Event) => {
    e.preventDefault();
    const names = Object.keys(changed);
    void m.run(
      `Changing ${names.join(', ')}…`,
      async () => {
        await api((c) => c.setRedisConfig(name, changed));
        setEdits({});
        return `Changed on the primary and the replica: ${names.map((k) => `${k} ${JSON.stringify(changed[k])}`).join(', ')}.`;
      },
      load,
    );
  };

  const err = m.error instanceof HangarApiError && m.error.status === 400 ? m.error : undefined;
  const settingError = (k: string) =>
    err?.field === k ? `${fieldMessage(err.message, {})}${err.allowed ? ` (${rangeOf(err.allowed)})` : ''}` : undefined;
  const general = err?.field && config && err.field in config ? undefined : m.error;
  return (
    <section aria-labelledby="redis-config-title">
      <h2 id="redis-config-title">Configuration</h2>
      <p class="hint">
        The Redis settings hangar lets you change, by their redis.conf names, as the primary runs them now. A change applies at once to the
        primary and the replica and stays across restarts; memory (the plan), persistence and replication are hangar's.
      </p>
      <ErrorBox error={loadError} title="The settings could not be read" />
      {config === undefined && !loadError ? <Busy>Loading the settings…</Busy> : null}
      {config ? (
        <form class="redis-config" onSubmit={submit} noValidate>
          {Object.entries(config).map(([k, v]) => (
            <Field key={k} label={k} error={settingError(k)}>
              {({ id, describedBy, invalid }) => (
                <input
                  id={id}
                  name={k}
                  autocomplete="off"
                  value={edits[k] ?? v}
                  onInput={(e) => setEdits({ ...edits, [k]: e.currentTarget.value })}
                  aria-describedby={describedBy}
                  aria-invalid={invalid}
                />
              )}
            </Field>
          ))}
          <div class="actions">
            <button type="submit" class="primary" disabled={m.busy !== undefined || Object.keys(changed).length === 0}>
              Save changes
            </button>
            <button type="button" onClick={() => setEdits({})} disabled={Object.keys(edits).length === 0}>
              Undo edits
            </button>
          </div>
        </form>
      ) : null}
      <MutationStatus mutation={m} error={general} />
    </section>
  );
}

/** A 400's `allowed`: the values, or an integer range's two ends. */
function rangeOf(allowed: readonly (string | number)[]): string {
  return allowed.length === 2 && allowed.every((a) => typeof a === 'number')
    ? `from ${allowed[0]} to ${allowed[1]}`
    : `one of: ${allowed.join(', ')}`;
}
