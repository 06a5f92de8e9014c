/**
 * Why a node's start failed, from what it wrote before it exited: the line that says it, not a
 * frame of the Java stack under it. A node that stops at start writes (some of, in this order):
 * warnings of its start script and of the JVM, log lines of its start, a line that announces the
 * failure ("uncaught exception in thread [main]", at ERROR from 6.x, at WARN in 5.x), then the
 * exception, its message prefixed by the exception classes that carried it, then the stack and
 * its causes. The JVM itself, when it cannot start, writes its reason first ("Unrecognized VM
 * option ..."), then "Error: Could not create the Java Virtual Machine.".
 */

/** A line of a Java stack trace, or the start of a cause's. */
const FRAME = /^\s*(?:at\s|\.\.\.\s*\d+\s+more|Caused by:|Suppressed:|Likely root cause:|Refer to the log)/;
/** Output that says nothing of the failure: log lines below ERROR, warnings, log4j's own status lines. */
const NOISE =
  /^\[[^\]]*\]\s*\[(?:TRACE|DEBUG|INFO|WARN)\s*\]|^(?:warning:|WARNING:|OpenJDK .*VM warning:|Java HotSpot)|^\d{4}-\d\d-\d\d [\d:,.]+ \w+ (?:ERROR|WARN) /i;
/** A line that says a failure follows: the next one says what it was. */
const ANNOUNCES = /uncaught exception in thread|fatal error in thread|exception while booting|bootstrap checks? failed/i;
/** A line that says a failure: a log line at ERROR or FATAL, or what the start scripts and the JVM print. */
const FAILURE =
  /^\[[^\]]*\]\s*\[(?:ERROR|FATAL)\s*\]|^(?:ERROR:|FATAL:|Exception in thread|Error:|Unrecognized VM option|Invalid maximum heap size|could not find java|Could not find)/i;
/** Exception class names that prefix a message (`org.x.StartupException: java.lang.IllegalArgumentException: ...`). */
const EXCEPTION_PREFIX = /^(?:[\w$]+\.)*[\w$]*(?:Exception|Error):\s*/;

/** A line without its `[time][level][logger] [node]` prefix, the JVM's `Exception in thread "x"` and exception classes. */
function message(line: string): string {
  let m = line
    .trim()
    .replace(/^(?:\[[^\]]*\]\s*)+/, '')
    .replace(/^(?:ERROR|FATAL):\s*/i, '')
    .replace(/^Exception in thread "[^"]*"\s*/, '');
  for (let prev = ''; prev !== m; ) {
    prev = m;
    m = m.replace(EXCEPTION_PREFIX, '');
  }
  return m.trim();
}

/** Whether a line can say why: not a stack frame, not noise, not empty once stripped. */
function telling(line: string): boolean {
  const m = message(line);
  return !FRAME.test(line) && !NOISE.test(line.trim()) && m !== '' && !NOISE.test(m);
}

/**
 * The reason of a failed start, from the node's output of that start: the first line that says a
 * failure (the line after it when it only announces one), without its log prefix and exception
 * classes; else the first line that is no warning, lower log line or stack frame; else the last
 * line. Undefined when the output is empty.
 */
export function startFailure(output: string): string | undefined {
  const lines = output.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return undefined;
  const first = lines.findIndex((l) => !FRAME.test(l) && (ANNOUNCES.test(l) || FAILURE.test(l.trim())));
  if (first >= 0) {
    const line = lines[first]!;
    const said = message(line);
    if (ANNOUNCES.test(line) || !telling(line)) {
      const next = lines.slice(first + 1).find(telling);
      if (next !== undefined) return /bootstrap checks? failed/i.test(said) ? `${said}: ${message(next)}` : message(next);
    }
    if (telling(line)) return said;
  }
  const plain = lines.find(telling);
  return plain !== undefined ? message(plain) : lines[lines.length - 1]!.trim();
}
