import { writeSync } from 'node:fs';

/**
 * Test-only fault injection: a function that kills this process with SIGKILL (so nothing after
 * it runs: no cleanup, no answer) when called with the step `dieAt` names (HANGAR_TEST_DIE_AT).
 * Does nothing otherwise. The line saying so is written synchronously: an asynchronous logger
 * would lose it to the kill.
 */
export function dieAtStep(dieAt: string | undefined): (name: string) => void {
  if (dieAt === undefined) return () => {};
  return (name) => {
    if (name !== dieAt) return;
    writeSync(
      2,
      `${JSON.stringify({ level: 40, time: Date.now(), step: name, msg: 'HANGAR_TEST_DIE_AT reached: killing this process' })}\n`,
    );
    process.kill(process.pid, 'SIGKILL');
    // SIGKILL is delivered asynchronously; make sure nothing after this step runs.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10_000);
  };
}
