/** A command as completion sees it: its words, its flags, and whether its first argument is an instance. */
export interface CompletionEntry {
  readonly name: string;
  readonly flags: readonly string[];
  /** Flags that take a value, and the values to offer (empty: free text). */
  readonly values: Readonly<Record<string, readonly string[]>>;
  readonly instanceArg: boolean;
  /** Words of the first argument, when they are a fixed set (e.g. bash zsh). */
  readonly argWords?: readonly string[];
  /**
   * Flags whose values depend on the value of another flag typed before: `--plan` offers the
   * plans of the `--service` given (all of them when none is).
   */
  readonly valuesBy?: Readonly<Record<string, DependentValues>>;
}

/** The values of a flag for each value of another flag (`on`). */
export interface DependentValues {
  readonly on: string;
  readonly by: Readonly<Record<string, readonly string[]>>;
}

/** The shell variable that holds the value given to a flag: `v_service` for --service. */
const varOf = (flag: string) => `v_${flag.replace(/[^A-Za-z0-9]/g, '_')}`;

const q = (s: string) => `"${s.replace(/(["\\$`])/g, '\\$1')}"`;

/** The case arms shared by the bash and zsh scripts; `$cands` gets the words to offer. */
function body(entries: readonly CompletionEntry[], names: string): string {
  const valueFlags = new Map<string, Set<string>>();
  for (const e of entries)
    for (const [f, vs] of Object.entries(e.values)) valueFlags.set(f, new Set([...(valueFlags.get(f) ?? []), ...vs]));
  const groups = new Map<string, Set<string>>();
  for (const e of entries) {
    const words = e.name.split(' ');
    for (let i = 0; i < words.length; i++) {
      const prefix = words.slice(0, i).join(' ');
      groups.set(prefix, (groups.get(prefix) ?? new Set()).add(words[i]!));
    }
  }
  const dependent = new Map<string, DependentValues>();
  for (const e of entries) for (const [f, d] of Object.entries(e.valuesBy ?? {})) dependent.set(f, d);
  const watched = [...new Set([...dependent.values()].map((d) => d.on))];
  const arm = (pattern: string, action: string, indent = 4) => `${' '.repeat(indent)}${pattern}) ${action};;`;
  const valuesOf = (f: string, vs: Set<string>) => {
    const all = vs.size > 0 ? `cands=${q([...vs].join(' '))}` : 'return 0';
    const d = dependent.get(f);
    if (!d) return all;
    const arms = Object.entries(d.by).map(([v, values]) => `${q(v)}) cands=${q(values.join(' '))};;`);
    return `case "$${varOf(d.on)}" in ${arms.join(' ')} *) ${all};; esac`;
  };
  const byLength = [...entries].sort((a, b) => b.name.length - a.name.length);
  return [
    `  for ((i = FIRST; i < CWORD; i++)); do`,
    `    w="\${WORDS[i]}"`,
    watched.length > 0
      ? `    if [[ -n "$skip" ]]; then case "$skip" in ${watched.map((f) => `--${f}) ${varOf(f)}="$w";;`).join(' ')} esac; skip=""; continue; fi`
      : `    if [[ -n "$skip" ]]; then skip=""; continue; fi`,
    `    case "$w" in`,
    ...(valueFlags.size > 0 ? [`      ${[...valueFlags.keys()].map((f) => `--${f}`).join('|')}) skip="$w"; continue;;`] : []),
    `      -*) continue;;`,
    `    esac`,
    `    cmd="\${cmd:+$cmd }$w"`,
    `  done`,
    `  case "$prev" in`,
    ...[...valueFlags].map(([f, vs]) => arm(`--${f}`, valuesOf(f, vs))),
    `    *)`,
    `      if [[ "$cur" == -* ]]; then`,
    `        case "$cmd" in`,
    ...byLength.map((e) => arm(`${q(e.name)}|${q(`${e.name} `)}*`, `cands=${q([...e.flags, 'help'].map((f) => `--${f}`).join(' '))}`, 10)),
    `        esac`,
    `      else`,
    `        case "$cmd" in`,
    ...[...groups].map(([prefix, words]) => arm(q(prefix), `cands=${q([...words].join(' '))}`, 10)),
    ...entries.filter((e) => e.instanceArg).map((e) => arm(q(e.name), `cands="$(${names} 2>/dev/null)"`, 10)),
    ...entries.filter((e) => e.argWords).map((e) => arm(q(e.name), `cands=${q(e.argWords!.join(' '))}`, 10)),
    `        esac`,
    `      fi;;`,
    `  esac`,
  ].join('\n');
}

/** Declarations of the variables that hold the values of watched flags (` v_service=""`). */
function vars(entries: readonly CompletionEntry[]): string {
  const on = new Set(entries.flatMap((e) => Object.values(e.valuesBy ?? {}).map((d) => d.on)));
  return [...on].map((f) => ` ${varOf(f)}=""`).join('');
}

/** A bash completion script: `source <(hangar completion bash)`. */
export function bashCompletion(entries: readonly CompletionEntry[]): string {
  return [
    '# bash completion for hangar',
    '# load it with:  source <(hangar completion bash)',
    '# or install it: hangar completion bash > /etc/bash_completion.d/hangar',
    '_hangar() {',
    `  local cur prev cmd="" skip="" cands="" w i${vars(entries)}`,
    '  local -a WORDS=("${COMP_WORDS[@]}")',
    '  local CWORD=$COMP_CWORD FIRST=1',
    '  cur="${COMP_WORDS[COMP_CWORD]}"',
    '  prev="${COMP_WORDS[COMP_CWORD-1]}"',
    body(entries, 'hangar instances ls --quiet'),
    '  COMPREPLY=($(compgen -W "$cands" -- "$cur"))',
    '}',
    'complete -F _hangar hangar',
    '',
  ].join('\n');
}

/** A zsh completion script: `source <(hangar completion zsh)` after compinit, or `_hangar` in $fpath. */
export function zshCompletion(entries: readonly CompletionEntry[]): string {
  return [
    '#compdef hangar',
    '# zsh completion for hangar',
    '# load it with:  source <(hangar completion zsh)   (after compinit)',
    '# or install it: hangar completion zsh > "${fpath[1]}/_hangar"',
    '_hangar() {',
    `  local cur prev cmd="" skip="" cands="" w i${vars(entries)}`,
    '  local -a WORDS; WORDS=("${words[@]}")',
    '  local CWORD=$CURRENT FIRST=2',
    '  cur="${words[CURRENT]}"',
    '  prev="${words[CURRENT-1]}"',
    body(entries, 'hangar instances ls --quiet'),
    '  compadd -- ${=cands}',
    '}',
    'if [[ "${funcstack[1]}" == "_hangar" ]]; then _hangar "$@"; else compdef _hangar hangar; fi',
    '',
  ].join('\n');
}
