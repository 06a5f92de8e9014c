/** Edit distance (insertions, deletions, substitutions) between two words. */
export function levenshtein(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * How far a typed word is from a known one: 0 when equal, a small number when it is a typo
 * (an edit distance of at most 2) or the start of it (`inst` for `instances`), undefined when
 * it is neither.
 */
function nearness(typed: string, known: string): number | undefined {
  if (typed === known) return 0;
  const d = levenshtein(typed, known);
  if (d <= 2 && d < known.length) return d;
  if (typed.length >= 2 && known.startsWith(typed)) return 3;
  return undefined;
}

/** The known word nearest to a typed one (a typo or a prefix of it), if one is near enough. */
export function closest(typed: string, known: readonly string[]): string | undefined {
  let best: { word: string; score: number } | undefined;
  for (const word of known) {
    const score = nearness(typed, word);
    if (score !== undefined && score > 0 && (!best || score < best.score)) best = { word, score };
  }
  return best?.word;
}

/**
 * The command (or group) that words typed wrong most likely meant: each of its words near the
 * typed one in its place (`instance ls` for `instances ls`). The longest such name wins, then
 * the nearest.
 */
export function closestCommand(words: readonly string[], names: readonly string[]): string | undefined {
  let best: { name: string; length: number; score: number } | undefined;
  for (const name of names) {
    const parts = name.split(' ');
    if (parts.length > words.length) continue;
    let score: number | undefined = 0;
    for (let i = 0; i < parts.length && score !== undefined; i++) {
      const s = nearness(words[i]!, parts[i]!);
      score = s === undefined ? undefined : score + s;
    }
    if (score === undefined || score === 0) continue;
    if (!best || parts.length > best.length || (parts.length === best.length && score < best.score))
      best = { name, length: parts.length, score };
  }
  return best?.name;
}
