import { and, eq } from 'drizzle-orm'
import type { Test } from 'tap'
import type { App } from '../../app.js'
import { idempotencyKeys } from '../../db/schema.js'
import { assertProblem } from './responses.js'

/** A route that creates, under test: where to POST, two different valid bodies, and how many rows there are. */
export interface CreateTarget {
  url: string
  body: () => object
  rows: () => Promise<number>
  headers?: Record<string, string>
  /** A body creates once at most (a unique email): without a key, sending it again is a 409. */
  unique?: boolean
}

/** `value` with the keys of every object in it in reverse order: the same JSON value, sent as other text. */
export function reordered (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).reverse().map(([key, item]) => [key, reordered(item)]))
}

let keys = 0
export const newKey = () => `key-${process.pid}-${++keys}-${Date.now()}`

/** Idempotency-Key on one create route: replays, conflicts, the key in flight, concurrency and expiry. */
export function idempotencyTests (t: Test, app: App, target: CreateTarget) {
  const { url, body, rows, headers = {}, unique = false } = target
  const post = (payload: object, key?: string, extra: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url, payload, headers: { ...headers, ...(key === undefined ? {} : { 'idempotency-key': key }), ...extra } })

  t.test('the same key and body replay the first answer, and create nothing more', async (t) => {
    const key = newKey()
    const payload = body()
    const before = await rows()
    const first = await post(payload, key)
    t.equal(first.statusCode, 201)
    t.notOk(first.headers['idempotent-replayed'], 'the first answer is no replay')
    for (let i = 0; i < 3; i++) {
      const again = await post(payload, key)
      t.equal(again.statusCode, 201)
      t.equal(again.payload, first.payload, 'the same body')
      for (const name of ['content-type', 'location', 'etag']) t.equal(again.headers[name], first.headers[name], name)
      t.equal(again.headers['idempotent-replayed'], 'true')
    }
    t.equal(await rows(), before + 1, 'one row')
    t.equal((await post(payload)).statusCode, unique ? 409 : 201, 'without a key, the same body is a request of its own')
    t.equal(await rows(), before + (unique ? 1 : 2))
  })

  t.test('the same body with its keys in another order is the same request: a replay, not a 422', async (t) => {
    const key = newKey()
    const payload = body()
    const before = await rows()
    const first = await post(payload, key)
    const again = await post(reordered(payload) as object, key)
    t.equal(again.statusCode, first.statusCode)
    t.equal(again.headers['idempotent-replayed'], 'true')
    t.equal(again.payload, first.payload)
    t.equal(await rows(), before + 1, 'one row')
  })

  t.test('the same key with another body is 422, and the first answer stays', async (t) => {
    const key = newKey()
    const payload = body()
    const first = await post(payload, key)
    const before = await rows()
    const reused = await post(body(), key)
    assertProblem(t, reused, 422, 'VALIDATION_FAILED')
    t.same(reused.json().errors.map((error: { path: string }) => error.path), ['/headers/idempotency-key'])
    t.equal(await rows(), before, 'nothing created')
    t.equal((await post(payload, key)).payload, first.payload, 'the first request still replays')
  })

  t.test('a key whose request is in flight is 409 with Retry-After; a failed request lets its key go', async (t) => {
    const key = newKey()
    const payload = body()
    const first = await post(payload, key)
    const scope = (await app.plinthDb.db.select({ scope: idempotencyKeys.scope }).from(idempotencyKeys).where(eq(idempotencyKeys.key, key)))[0]!.scope
    // As if the first request were still being handled.
    const inFlight = newKey()
    await app.plinthDb.db.insert(idempotencyKeys).values({ scope, key: inFlight, fingerprint: 'x', expires_at: new Date(Date.now() + 60_000) })
    const held = await post(payload, inFlight)
    assertProblem(t, held, 409, 'IDEMPOTENCY_KEY_IN_FLIGHT')
    t.equal(held.headers['retry-after'], '1')
    t.equal(first.statusCode, 201)

    const refused = newKey()
    t.equal((await post({ nonsense: true }, refused)).statusCode, 422, 'a request that fails')
    t.same(await app.plinthDb.db.select().from(idempotencyKeys).where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, refused))), [],
      'keeps no record of its key')
    t.equal((await post(body(), refused)).statusCode, 201, 'which then works for the corrected request')
  })

  t.test('concurrent requests with one key create exactly one row', async (t) => {
    const key = newKey()
    const payload = body()
    const before = await rows()
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(payload, key)))
    const fresh = answers.filter((res) => res.statusCode === 201 && res.headers['idempotent-replayed'] === undefined)
    t.equal(fresh.length, 1, 'one answer is the first')
    t.ok(answers.every((res) => res.statusCode === 201 || res.statusCode === 409), 'the others replay it or are told it is in flight')
    t.equal(await rows(), before + 1)
  })

  t.test('an expired key is a new one', async (t) => {
    const key = newKey()
    await post(body(), key)
    await app.plinthDb.db.update(idempotencyKeys).set({ expires_at: new Date(Date.now() - 1000) }).where(eq(idempotencyKeys.key, key))
    const before = await rows()
    const again = await post(body(), key)
    t.equal(again.statusCode, 201, 'another body with the key is no conflict')
    t.notOk(again.headers['idempotent-replayed'], 'created anew')
    t.equal(await rows(), before + 1)
  })
}
