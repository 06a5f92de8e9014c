/** Redis's own human-readable size format (`used_memory_human`): 1023B, 1.00K, 2.50M, 1.00G. */
export function bytesToHuman(n: number): string {
  const units = ['K', 'M', 'G', 'T', 'P'];
  if (n < 1024) return `${n}B`;
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(2)}${units[i]}`;
}

/** Parses the text of `INFO` into key/value pairs. */
export function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line || line.startsWith('#')) continue;
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}
