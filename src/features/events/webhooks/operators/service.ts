import { randomUUID } from 'node:crypto';
import type { Config } from '../../../../config.js';
import type { AuditLog } from '../../../../platform/audit/audit.js';
import { type Clock, iso } from '../../../../platform/clock.js';
import type { Sealer } from '../../../../platform/crypto/seal.js';
import type { Database, Executor } from '../../../../platform/db/database.js';
import type { CursorCodec, CursorScope } from '../../../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../../../platform/pagination/page.js';
import { Problem } from '../../../../platform/problem.js';
import * as repo from '../repository.js';
import { newSecret, newSigningKey, previousSecretAad, secretAad, signingKeyAad } from '../signing.js';
import { endpointView as view } from '../view.js';
import type { CreateEndpointBody, RecoveryBody, RotateSecretBody, UpdateEndpointBody } from './schemas.js';

/** What the operators' webhook endpoint acts use. */
export interface WebhookEndpointDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  sealer: Sealer;
  cursors: CursorCodec;
  config: Pick<Config, 'events'>;
}

const notFound = () => new Problem('admin.webhook_endpoint_not_found');

/**
 * The operators' webhook endpoints (docs/events.md, "Endpoints"). Every write appends its audit
 * record, actor `admin:<key name>`, in its transaction; the record names the endpoint, never its
 * URL's secrets (the URL is not recorded) nor its signing secret.
 */
export class WebhookEndpoints {
  constructor(private readonly deps: WebhookEndpointDeps) {}

  async list(scope: CursorScope, query: PageQuery) {
    const { db } = this.deps.database;
    const fetch = (window: KeysetWindow) => repo.endpointsPage(db, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return { items: items.map(view), pageInfo };
  }

  async read(id: string) {
    const row = await repo.endpointById(this.deps.database.db, id);
    if (!row) throw notFound();
    return view(row);
  }

  /** A new endpoint and its secret, answered this once. */
  async create(input: CreateEndpointBody, actor: string) {
    this.#checkUrl(input.url);
    const id = randomUUID();
    const secret = newSecret();
    const key = input.ed25519 ? newSigningKey() : null;
    const now = this.deps.clock.now();
    const row: repo.EndpointRow = {
      id,
      url: input.url,
      description: input.description ?? '',
      eventTypes: input.eventTypes ?? [],
      organizationId: input.organizationId ?? null,
      sealedSecret: this.deps.sealer.seal(secret, secretAad(id)),
      sealedPreviousSecret: null,
      previousSecretUntil: null,
      sealedEd25519Key: key ? this.deps.sealer.seal(key.privateKey, signingKeyAad(id)) : null,
      ed25519PublicKey: key?.publicKey ?? null,
      disabledAt: null,
      disabledReason: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.database.db.transaction().execute(async (trx) => {
      await repo.insertEndpoint(trx, row);
      await this.#audit(trx, 'webhook_endpoint.created', actor, id, {
        ed25519: key !== null,
        eventTypes: row.eventTypes.length,
      });
    });
    return { ...view(row), secret };
  }

  async update(id: string, input: UpdateEndpointBody, actor: string) {
    if (input.url !== undefined) this.#checkUrl(input.url);
    return this.#write(id, actor, 'webhook_endpoint.updated', async (trx, _row, now) => {
      await repo.updateEndpoint(trx, id, {
        ...(input.url !== undefined ? { url: input.url } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.eventTypes !== undefined ? { eventTypes: input.eventTypes } : {}),
        ...(input.organizationId !== undefined ? { organizationId: input.organizationId } : {}),
        updatedAt: now,
      });
      return { fields: Object.keys(input).sort().join(',') };
    });
  }

  /** No delivery is made or sent for a disabled endpoint; its pending ones wait for it. Idempotent. */
  disable(id: string, actor: string) {
    return this.#write(id, actor, 'webhook_endpoint.disabled', async (trx, row, now) => {
      if (row.disabledAt === null)
        await repo.updateEndpoint(trx, id, { disabledAt: now, disabledReason: 'operator', updatedAt: now });
      return { changed: row.disabledAt === null };
    });
  }

  /** Enabled afresh: its failures before count no more towards the 5 days that disable it. */
  enable(id: string, actor: string) {
    return this.#write(id, actor, 'webhook_endpoint.enabled', async (trx, row, now) => {
      if (row.disabledAt !== null)
        await repo.updateEndpoint(trx, id, {
          disabledAt: null,
          disabledReason: null,
          failingSince: null,
          updatedAt: now,
        });
      return { changed: row.disabledAt !== null };
    });
  }

  /** Gone with its deliveries. */
  async delete(id: string, actor: string): Promise<void> {
    await this.#write(id, actor, 'webhook_endpoint.deleted', async (trx) => {
      await repo.deleteEndpoint(trx, id);
      return {};
    });
  }

  /**
   * A new secret, answered this once; the current one becomes the previous and signs beside it
   * for `overlapSeconds`, so a receiver can move to the new one without refusing a delivery.
   */
  async rotate(id: string, input: RotateSecretBody, actor: string) {
    const secret = newSecret();
    const overlap = input.overlapSeconds ?? 86400;
    const updated = await this.#write(id, actor, 'webhook_endpoint.secret_rotated', async (trx, row, now) => {
      const current = this.deps.sealer.open(row.sealedSecret, secretAad(id));
      await repo.updateEndpoint(trx, id, {
        sealedSecret: this.deps.sealer.seal(secret, secretAad(id)),
        sealedPreviousSecret: overlap > 0 ? this.deps.sealer.seal(current, previousSecretAad(id)) : null,
        previousSecretUntil: overlap > 0 ? new Date(now.getTime() + overlap * 1000) : null,
        updatedAt: now,
      });
      return { overlapSeconds: overlap };
    });
    return { ...updated, secret };
  }

  /** The delivery again, now, with the same `webhook-id` (the receiver's idempotency key). */
  async resend(id: string, deliveryId: string, actor: string): Promise<void> {
    await this.#write(id, actor, 'webhook_endpoint.delivery_resent', async (trx, _row, now) => {
      const outcome = await repo.resendDelivery(trx, id, deliveryId, now);
      if (outcome === 'unknown') throw new Problem('admin.webhook_delivery_not_found');
      if (outcome === 'in_flight') throw new Problem('admin.webhook_delivery_in_flight');
      return { deliveryId };
    });
  }

  /** Every event since `since` the endpoint did not receive, queued again (see repo.recoverSince). */
  async recover(id: string, input: RecoveryBody, actor: string): Promise<{ queued: number }> {
    let queued = 0;
    await this.#write(id, actor, 'webhook_endpoint.recovered', async (trx, _row, now) => {
      queued = await repo.recoverSince(trx, id, new Date(input.since), now);
      return { since: new Date(input.since).toISOString(), queued };
    });
    return { queued };
  }

  /** An endpoint's deliveries, newest first, each with its last attempt's outcome. */
  async deliveries(scope: CursorScope, query: PageQuery, id: string) {
    const { db } = this.deps.database;
    if (!(await repo.endpointById(db, id))) throw notFound();
    const fetch = (window: KeysetWindow) => repo.deliveriesPage(db, id, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return {
      items: items.map((d) => ({
        id: d.id,
        eventId: d.eventId,
        status: d.status as 'pending' | 'delivered' | 'dead',
        attempts: d.attempts,
        dueAt: new Date(d.dueAt).toISOString(),
        lastAttemptAt: iso(d.lastAttemptAt),
        lastStatusCode: d.lastStatusCode,
        lastError: d.lastError,
        lastLatencyMs: d.lastLatencyMs,
        createdAt: new Date(d.createdAt).toISOString(),
      })),
      pageInfo,
    };
  }

  /** Under WEBHOOK_PRIVATE_ADDRESSES=refuse an http URL is refused now (its address at each delivery). */
  #checkUrl(url: string): void {
    if (!this.deps.config.events.privateAddresses && !url.startsWith('https://'))
      throw new Problem('admin.webhook_url_refused');
  }

  /** One write under the endpoint's row lock, then its audit record; the endpoint as it is after. */
  async #write(
    id: string,
    actor: string,
    name: string,
    act: (
      trx: Executor,
      row: repo.EndpointRow,
      now: Date,
    ) => Promise<Record<string, string | number | boolean>>,
  ) {
    return this.deps.database.db.transaction().execute(async (trx) => {
      const row = await repo.endpointById(trx, id, true);
      if (!row) throw notFound();
      const details = await act(trx, row, this.deps.clock.now());
      const after = await repo.endpointById(trx, id);
      await this.#audit(trx, name, actor, id, details);
      return after ? view(after) : view(row);
    });
  }

  #audit(
    trx: Executor,
    name: string,
    actor: string,
    target: string,
    details: Record<string, string | number | boolean>,
  ) {
    return this.deps.audit.append(trx, { name, actor, target, outcome: 'success', details });
  }
}
