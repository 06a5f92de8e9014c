/** A URL an account registered to be sent the events of the kinds it chose, signed with its secret. */
export interface Webhook {
  readonly id: string;
  readonly accountId: string;
  readonly url: string;
  /** Event kinds, families (`operation`, `instance`) or `*`. */
  readonly kinds: readonly string[];
  readonly description: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Until when the secret before the last rotation still signs deliveries too; null when none does. */
  readonly previousSecretUntil: number | null;
}

/** A webhook with its secret, as created or rotated: the only time the secret is shown. */
export interface WebhookWithSecret extends Webhook {
  readonly secret: string;
}

export const DELIVERY_STATES = ['PENDING', 'DELIVERED', 'FAILED'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** One event sent (or to be sent) to one webhook, with how its attempts went. */
export interface WebhookDelivery {
  readonly id: string;
  readonly webhookId: string;
  readonly eventId: number;
  readonly eventKind: string;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly nextAttemptAt: number | null;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly deliveredAt: number | null;
}
