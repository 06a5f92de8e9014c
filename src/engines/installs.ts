import { ELASTICSEARCH_INSTALL, ELASTICSEARCH_OSS_INSTALL, OPENSEARCH_INSTALL } from './elasticsearch/elasticsearch-install.js';
import { FERRETDB_INSTALL } from './ferretdb/ferretdb-install.js';
import type { InstallRecipe } from './install/install-recipe.js';

/** Every product `hangar engines install` knows, by name. */
export const INSTALL_RECIPES: readonly InstallRecipe[] = [
  ELASTICSEARCH_INSTALL,
  ELASTICSEARCH_OSS_INSTALL,
  OPENSEARCH_INSTALL,
  FERRETDB_INSTALL,
];

/** A `<product>@<version>` that cannot be installed: says what can. */
export class UnknownEngineError extends Error {
  override name = 'UnknownEngineError';
}

const choices = (r: InstallRecipe) => r.versions.map((v) => `${r.product}@${v}`).join(', ');

/** The recipe and version named by `<product>@<version>`; refused versions and unknown ones say what hangar installs. */
export function resolveEngineRef(ref: string): { recipe: InstallRecipe; version: string } {
  const m = /^([a-z][a-z0-9-]*)@(\d+\.\d+\.\d+)$/.exec(ref);
  const recipe = INSTALL_RECIPES.find((r) => r.product === (m?.[1] ?? ref.split('@')[0]));
  if (!recipe) {
    throw new UnknownEngineError(`"${ref}" is no engine hangar installs; products: ${INSTALL_RECIPES.map((r) => r.product).join(', ')}`);
  }
  if (!m) throw new UnknownEngineError(`"${ref}": name a version as ${recipe.product}@X.Y.Z; hangar installs ${choices(recipe)}`);
  const version = m[2]!;
  const why = recipe.refused[version];
  if (why !== undefined) throw new UnknownEngineError(`${recipe.product} ${version} ${why}; hangar installs ${choices(recipe)}`);
  if (!recipe.versions.includes(version)) {
    throw new UnknownEngineError(
      `${recipe.product} ${version} is not one hangar installs (not verified to run here); it installs ${choices(recipe)}`,
    );
  }
  return { recipe, version };
}
