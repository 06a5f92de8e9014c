import { randomBytes } from 'node:crypto';
import { errors } from '../domain/errors.js';
import { isKindFilter } from '../domain/operations.js';
import { DELIVERY_STATES, type Webhook, type WebhookDelivery, type WebhookWithSecret } from '../domain/webhooks.js';
import { newObjectId } from '../lib/ids.js';
import { refusal, type TargetPolicy } from '../lib/ssrf-guard.js';
import { sleep } from '../lib/time.js';
import { TargetRefused, checkTarget } from '../lib/webhook-http.js';
import {
  countAttemptsInFlight,
  findWebhook,
  insertWebhook,
  listDeliveries,
  listWebhooks,
  markWebhookDeleted,
  removeWebhook,
  rotateWebhookSecret,
} from '../store/webhook-repository.js';
import type { Caller, ServiceDeps } from './deps.js';

/** Webhooks an account may have. */
export const MAX_WEBHOOKS = 20;
/** After a rotation, the old secret also signs deliveries for this long (receivers switch meanwhile). */
export const ROTATION_GRACE_MS = 24 * 3600 * 1000;
/** A delete waits this long at most for attempts in flight (their timeout is shorter). */
const DELETE_WAIT_MS = 15_000;

export interface WebhookInput {
  readonly url: string;
  readonly kinds?: readonly string[];
  readonly description?: string;
}

/** A new signing secret: 32 random bytes. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * Webhooks: an account registers a URL and the event kinds it wants; hangar signs each delivery
 * with the webhook's secret (shown once, at creation and at each rotation). Targets are checked
 * here against the SSRF policy, and again at each delivery on the addresses connected to.
 */
export class WebhookService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly policy: TargetPolicy,
  ) {}

  async create(caller: Caller, input: WebhookInput): Promise<WebhookWithSecret> {
    const url = await this.assertTarget(input.url);
    const kinds = [...new Set(input.kinds ?? ['*'])];
    if (kinds.length === 0) throw errors.invalidValue('kinds', '"kinds" must name at least one kind (or "*" for all)');
    for (const k of kinds) {
      if (!isKindFilter(k))
        throw errors.invalidValue(
          'kinds',
          `"kinds": ${JSON.stringify(k)} is no kind of event; give kinds, families (operation, instance) or *`,
        );
    }
    const now = this.deps.now();
    const secret = newSecret();
    const webhook = {
      id: newObjectId(now),
      accountId: caller.accountId,
      url: url.toString(),
      kinds,
      description: input.description ?? '',
      secret,
      createdAt: now,
    };
    if (!(await insertWebhook(this.deps.db, this.deps.keyring, webhook, MAX_WEBHOOKS)))
      throw errors.quotaExceeded('webhooks per account', MAX_WEBHOOKS);
    return { ...webhook, updatedAt: now, previousSecretUntil: null };
  }

  list(caller: Caller): Promise<Webhook[]> {
    return listWebhooks(this.deps.db, caller.accountId);
  }

  /** The caller's webhook; another account's is the same 404 as none. */
  async get(caller: Caller, id: string): Promise<Webhook> {
    const w = await findWebhook(this.deps.db, caller.accountId, id);
    if (!w) throw errors.webhookNotFound(id);
    return w;
  }

  /**
   * Deletes a webhook: no attempt starts from now on, the attempts in flight are waited for, then
   * it goes with its delivery records. Once this returns, its receiver gets nothing more.
   */
  async delete(caller: Caller, id: string): Promise<void> {
    const { db } = this.deps;
    if (!(await markWebhookDeleted(db, caller.accountId, id, this.deps.now()))) throw errors.webhookNotFound(id);
    const until = Date.now() + DELETE_WAIT_MS;
    while (Date.now() < until && (await countAttemptsInFlight(db, id, this.deps.now())) > 0) await sleep(50);
    await removeWebhook(db, id);
  }

  /** A new secret, shown in this answer only; the old one also signs for ROTATION_GRACE_MS. */
  async rotateSecret(caller: Caller, id: string): Promise<WebhookWithSecret> {
    const now = this.deps.now();
    const secret = newSecret();
    if (!(await rotateWebhookSecret(this.deps.db, this.deps.keyring, caller.accountId, id, secret, now, now + ROTATION_GRACE_MS)))
      throw errors.webhookNotFound(id);
    return { ...(await this.get(caller, id)), secret };
  }

  /** A webhook's deliveries, newest first. */
  async deliveries(
    caller: Caller,
    id: string,
    opts: { limit: number; beforeEventId?: number; states?: readonly string[] },
  ): Promise<WebhookDelivery[]> {
    await this.get(caller, id);
    for (const s of opts.states ?? [])
      if (!(DELIVERY_STATES as readonly string[]).includes(s))
        throw errors.invalidValue('state', `"state" ${JSON.stringify(s)} is not a delivery state`, DELIVERY_STATES);
    return listDeliveries(this.deps.db, id, opts);
  }

  /** The URL, if hangar may send webhooks there: https (http with the setting), and an address the policy allows. */
  private async assertTarget(raw: string): Promise<URL> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw errors.invalidValue('url', '"url" is not a URL');
    }
    const allowHttp = this.deps.config.webhookAllowHttp;
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) {
      throw errors.invalidValue(
        'url',
        `"url" must be an https:// URL${allowHttp ? ' or an http:// one' : ' (http:// only with HANGAR_WEBHOOK_ALLOW_HTTP=true)'}`,
      );
    }
    if (url.username !== '' || url.password !== '')
      throw errors.invalidValue('url', '"url" must not carry credentials: receivers check the signature instead');
    url.hash = '';
    try {
      await checkTarget(url, (ip, port) => refusal(ip, port, this.policy));
    } catch (err) {
      if (err instanceof TargetRefused) throw errors.targetNotAllowed(`"url": ${err.message}`);
      throw errors.invalidValue(
        'url',
        `"url": the host ${url.hostname} does not resolve (${(err as { code?: string }).code ?? (err as Error).message})`,
      );
    }
    return url;
  }
}
