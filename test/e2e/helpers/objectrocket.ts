import { spawnSync } from 'node:child_process';

/**
 * A Python with the objectrocket client (PyPI objectrocket 0.7.0 and test/e2e/python/requirements.txt):
 * HANGAR_TEST_OBJECTROCKET_PYTHON, else python3 when it imports it and `modules` (the driver a
 * test uses: pymongo, redis). In CI its absence fails the run; elsewhere the test is left out,
 * saying what to install.
 */
export function objectrocketPython(modules: readonly string[] = ['pymongo']): string | undefined {
  const python = process.env.HANGAR_TEST_OBJECTROCKET_PYTHON ?? 'python3';
  if (spawnSync(python, ['-c', `import ${['objectrocket', ...modules].join(', ')}`], { stdio: 'ignore' }).status === 0) return python;
  const message =
    'the objectrocket Python client is not installed (a venv with `pip install --no-deps objectrocket==0.7.0` and `pip install -r test/e2e/python/requirements.txt`, named by HANGAR_TEST_OBJECTROCKET_PYTHON; .ci/run makes one)';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}: its test is left out`);
  return undefined;
}
