/**
 * hangar's engine cache: engines that no Debian package provides, fetched from their publishers,
 * checked, unpacked or built into `<cache>/<product>/<version>/` with a manifest. The products'
 * recipes live with their products (`elasticsearch/elasticsearch-install.ts`,
 * `ferretdb/ferretdb-install.ts`); `../installs.ts` lists them.
 */
export { engineCacheFingerprint, findInstalledEngine, installedEngines, installEngine, scanEngineCache } from './engine-cache.js';
export type { BrokenInstall, BuiltEngine, CacheScan, InstallOutcome } from './engine-cache.js';
export { MANIFEST_FILE, sourceJson } from './engine-manifest.js';
export type { EngineSource, InstalledEngine } from './engine-manifest.js';
export type { InstallContext, InstallProgress, InstallRecipe } from './install-recipe.js';
export { findJavaRuntimes, type JavaRuntime } from './java-runtime.js';
