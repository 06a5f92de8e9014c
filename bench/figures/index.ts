import type { Figure } from '../lib/context.js';
import { aclFigure } from './acl.js';
import { backupFigure } from './backup.js';
import { connectionsFigure } from './connections.js';
import { createFigure } from './create.js';
import { deleteFigure } from './delete.js';
import { elasticsearchFigure } from './elasticsearch.js';
import { densityFigure } from './density.js';
import { getFigure } from './get.js';
import { idleFigure } from './idle.js';
import { listFigure } from './list.js';
import { loadFigure } from './load.js';
import { resizeFigure } from './resize.js';
import { storeFigure } from './store.js';
import { throughputFigure } from './throughput.js';
import { tlsFigure } from './tls.js';

/** Every figure, in the order they run (those sharing a hangar side by side). */
export const FIGURES: readonly Figure[] = [
  listFigure,
  getFigure,
  createFigure,
  deleteFigure,
  aclFigure,
  resizeFigure,
  backupFigure,
  elasticsearchFigure,
  throughputFigure,
  connectionsFigure,
  tlsFigure,
  storeFigure,
  idleFigure,
  densityFigure,
  loadFigure,
];
