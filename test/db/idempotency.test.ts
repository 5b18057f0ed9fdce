import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { createIdempotencyStore } from '../../db/idempotency.js'
import { idempotencyKeys } from '../../db/schema.js'
import { freshDatabase } from '../support/database.js'

const { db } = await freshDatabase(t)
const store = createIdempotencyStore(db)
const HOUR = 3_600_000

t.test('a key is claimed once; its answer is kept; another scope has keys of its own', async (t) => {
  t.same(await store.claim('user:1', 'k', 'f1', HOUR), { claimed: true })
  t.match(await store.claim('user:1', 'k', 'f1', HOUR), { claimed: false, held: { fingerprint: 'f1', status: null } }, 'in flight')
  await store.answer('user:1', 'k', 201, { location: '/x/1' }, '{"id":1}')
  t.match(await store.claim('user:1', 'k', 'f2', HOUR), { claimed: false, held: { fingerprint: 'f1', status: 201, headers: { location: '/x/1' }, body: '{"id":1}' } })
  t.same(await store.claim('user:2', 'k', 'f1', HOUR), { claimed: true })
})

t.test('a released key can be claimed again; an answered one is not released', async (t) => {
  await store.claim('user:1', 'r', 'f', HOUR)
  await store.release('user:1', 'r')
  t.same(await store.claim('user:1', 'r', 'f', HOUR), { claimed: true })
  await store.answer('user:1', 'r', 201, {}, '{}')
  await store.release('user:1', 'r')
  t.match(await store.claim('user:1', 'r', 'f', HOUR), { claimed: false, held: { status: 201 } })
})

t.test('a claim left in flight for over a minute (its process died) is taken over', async (t) => {
  await store.claim('user:1', 'a', 'f', HOUR)
  await db.update(idempotencyKeys).set({ created_at: sql`now() - interval '2 minutes'` }).where(eq(idempotencyKeys.key, 'a'))
  t.same(await store.claim('user:1', 'a', 'g', HOUR), { claimed: true })
  t.match(await store.claim('user:1', 'a', 'g', HOUR), { claimed: false, held: { fingerprint: 'g', status: null } })
})

t.test('purge deletes the records past their expiry, and only those', async (t) => {
  await store.claim('user:9', 'old', 'f', HOUR)
  await store.claim('user:9', 'new', 'f', HOUR)
  await db.update(idempotencyKeys).set({ expires_at: new Date(Date.now() - 1000) }).where(eq(idempotencyKeys.key, 'old'))
  t.equal(await store.purge(), 1)
  t.same((await db.select({ key: idempotencyKeys.key }).from(idempotencyKeys).where(eq(idempotencyKeys.scope, 'user:9'))).map((row) => row.key), ['new'])
})
