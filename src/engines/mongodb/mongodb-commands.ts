/** A command document or reply, as the driver takes and gives them. */
export type MongoDocument = Record<string, unknown>;

/**
 * Runs one command on one database of a MongoDB deployment and resolves with the reply (`ok: 1`),
 * or rejects with the server's error (its numeric `code` preserved). The only thing hangar's
 * MongoDB logic needs of a connection: the driver implements it, tests use a fake.
 */
export interface MongoCommands {
  run(database: string, command: MongoDocument): Promise<MongoDocument>;
}

/** Server error codes hangar reacts to (MongoDB's error_codes.yml). */
export const MONGO_ERROR = {
  UserNotFound: 11,
  Unauthorized: 13,
  AuthenticationFailed: 18,
  AlreadyInitialized: 23,
  NotYetInitialized: 94,
  /** createUser of a user that exists (`Location51003`). */
  UserAlreadyExists: 51003,
} as const;

/** The server's error code carried by a failure, if any. */
export function mongoErrorCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}
