/** A command with its environment: what `hangar connect` runs and the console shows. */
export interface CommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The command as one line to paste into a POSIX shell: its variables first, every word quoted where it needs to be. */
export function shellLine(cmd: CommandLine): string {
  return [...Object.entries(cmd.env).map(([k, v]) => `${k}=${quote(v)}`), cmd.command, ...cmd.args.map(quote)].join(' ');
}
