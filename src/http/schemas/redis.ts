import { Type } from 'typebox';
import { PLANS } from '../../domain/catalog.js';

export const ResizeBody = Type.Object(
  { new_plan: Type.Integer({ description: `The new plan in MB, larger than the current one: ${PLANS.redis.join(', ')}` }) },
  { additionalProperties: false, examples: [{ new_plan: 1000 }] },
);

export const SpaceUsage = Type.Object(
  {
    freeSpacePercentage: Type.Number({ description: 'Share of maxmemory still free, in percent' }),
    usedMemoryHuman: Type.String({ description: 'used_memory_human of INFO memory, e.g. 1.02M' }),
  },
  { description: 'Memory use (spec 2.5)' },
);
