import type { ClientCommand } from './client-command.js';
import { aclCommands } from './commands/acls.js';
import { backupCommands } from './commands/backups.js';
import { connectCommand } from './commands/connect.js';
import { eventCommands } from './commands/events.js';
import { operationCommands } from './commands/operations.js';
import { webhookCommands } from './commands/webhooks.js';
import { instanceCommands } from './commands/instances.js';
import { loginCommands } from './commands/login.js';
import { mongoUserCommands } from './commands/mongo-users.js';
import { redisCommands } from './commands/redis.js';
import { redisConfigCommands, redisUserCommands } from './commands/redis-users.js';
import { tlsCommands } from './commands/tls.js';
import { zoneCommands } from './commands/zones.js';
import { type CompletionEntry, bashCompletion, zshCompletion } from './completion.js';
import { UsageError } from './io.js';
import { OPERATOR_COMMANDS } from './operator-commands.js';
import { settingOptions } from '../config.js';

/** Shell completion of every command, operator commands included. */
function completionEntries(): CompletionEntry[] {
  const settings = Object.keys(settingOptions());
  return [
    ...CLIENT_COMMANDS.map((c) => ({
      name: c.name,
      flags: Object.keys(c.options),
      values: Object.fromEntries(
        Object.entries(c.options)
          .filter(([, o]) => o.type === 'string')
          .map(([f, o]) => [f, o.choices ?? []]),
      ),
      valuesBy: Object.fromEntries(
        Object.entries(c.options)
          .filter(([, o]) => o.choicesBy !== undefined)
          .map(([f, o]) => [f, o.choicesBy!]),
      ),
      // The first argument names an existing instance (a create names a new one).
      instanceArg: (c.args[0] === 'NAME' || c.args[0] === 'INSTANCE') && c.name !== 'instances create',
      ...(c.name === 'completion' ? { argWords: ['bash', 'zsh'] } : {}),
    })),
    ...OPERATOR_COMMANDS.map((c) => ({
      name: c.name,
      flags: [...Object.keys(c.options), ...settings],
      values: Object.fromEntries(
        [
          ...Object.entries(c.options)
            .filter(([, o]) => o.type === 'string')
            .map(([f]) => f),
          ...settings,
        ].map((f) => [f, f === 'runtime' ? ['local', 'emulated'] : []]),
      ),
      instanceArg: false,
      ...(c.argWords ? { argWords: c.argWords() } : {}),
    })),
  ];
}

const completionCommand: ClientCommand = {
  kind: 'client',
  name: 'completion',
  summary: 'Print the shell completion script for bash or zsh',
  args: ['SHELL'],
  remote: false,
  options: {},
  examples: ['source <(hangar completion bash)   # in ~/.bashrc', 'source <(hangar completion zsh)    # in ~/.zshrc, after compinit'],
  details: 'Completes commands, flags, flag values and instance names (from hangar instances ls --quiet).',
  async run(ctx) {
    const shell = ctx.args[0];
    if (shell === 'bash') ctx.io.out(bashCompletion(completionEntries()));
    else if (shell === 'zsh') ctx.io.out(zshCompletion(completionEntries()));
    else throw new UsageError(`no completion for "${shell}": bash or zsh`);
  },
};

/** The commands for people who use the API. */
export const CLIENT_COMMANDS: readonly ClientCommand[] = [
  ...loginCommands,
  ...instanceCommands,
  ...backupCommands,
  ...aclCommands,
  ...redisCommands,
  ...redisConfigCommands,
  ...redisUserCommands,
  ...mongoUserCommands,
  ...tlsCommands,
  ...zoneCommands,
  ...operationCommands,
  ...eventCommands,
  ...webhookCommands,
  connectCommand,
  completionCommand,
];
