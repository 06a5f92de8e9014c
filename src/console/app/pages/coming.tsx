import { href } from '../router.js';

/**
 * Pages the console has a place for and hangar has no API for yet: operations (the long
 * actions of every instance, with their progress) and backups. Each gets its route and its
 * entry in the navigation now; its content lands with its API.
 */
export function ComingPage({ what }: { what: 'operations' | 'backups' }) {
  const text =
    what === 'operations'
      ? 'Operations will list the long actions of your instances (creations, resizes, deletions) with their progress and outcome.'
      : 'Backups will list the backups of your instances, and take and restore them.';
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        {what === 'operations' ? 'Operations' : 'Backups'}
      </h1>
      <p>{text}</p>
      <p class="hint">
        This hangar has no API for them yet. Meanwhile, the state of each instance shows what runs on it: see <a href={href('instances')}>Instances</a>, and the{' '}
        <a href={href('events')}>audit log</a> for what was done.
      </p>
    </section>
  );
}
