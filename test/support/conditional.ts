import { sql } from 'drizzle-orm'
import type { Test } from 'tap'
import type { App } from '../../app.js'
import { rowsOf } from './database.js'
import { assertProblem } from './responses.js'

/** A kind of row under test: how to make one, and a change to write to it. */
export interface ConditionalTarget {
  /** Creates a row and answers its URL. */
  create: () => Promise<string>
  /** A valid body for `method`, different each call, so every write changes the row. */
  change: () => object
  method?: 'PATCH' | 'PUT'
  headers?: Record<string, string>
  /** False where the row cannot be deleted through its URL. */
  deletes?: boolean
}

/** Strong, and opaque: 16 bytes in base64url, never the row's version. */
const STRONG = /^"[\w-]{22}"$/

/** The transaction id that last wrote the row at `url` (its last path segment is its id). */
async function xminOf (app: App, table: string, url: string): Promise<string> {
  const id = Number(url.split('/').filter(Boolean).at(-1))
  const [row] = rowsOf<{ xmin: string }>(await app.plinthDb.db.execute(sql`select xmin::text as xmin from ${sql.identifier(table)} where id = ${id}`))
  return row!.xmin
}

/**
 * ETags, If-None-Match, If-Match and racing writers on one kind of row, the same for every kind:
 * what HTTP promises does not depend on the table behind it.
 */
/** `table` is the table behind the URLs, whose row versions the ETags must not show. */
export function conditionalTests (t: Test, app: App, target: ConditionalTarget & { table: string }) {
  const { create, change, method = 'PATCH', headers = {}, deletes = true, table } = target
  const get = (url: string, extra: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers: { ...headers, ...extra } })
  const write = (url: string, extra: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { ...headers, ...extra }, payload: change() })
  const remove = (url: string, extra: Record<string, string> = {}) => app.inject({ method: 'DELETE', url, headers: { ...headers, ...extra } })

  t.test('a GET carries a strong ETag; If-None-Match with it is 304 with no body', async (t) => {
    const url = await create()
    const first = await get(url)
    t.equal(first.statusCode, 200)
    const etag = String(first.headers.etag)
    t.match(etag, STRONG, 'strong, from the row version')
    t.equal((await get(url)).headers.etag, etag, 'the same while the row is unchanged')
    for (const field of [etag, `W/${etag}`, `"0", ${etag}`, '*']) {
      const res = await get(url, { 'if-none-match': field })
      t.equal(res.statusCode, 304, `If-None-Match: ${field}`)
      t.equal(res.payload, '', 'no body')
      t.equal(res.headers.etag, etag, 'the ETag it matched')
    }
    const other = await get(url, { 'if-none-match': '"0"' })
    t.equal(other.statusCode, 200, 'another ETag gets the row')
    t.same(other.json(), first.json())
  })

  t.test('an ETag holds no transaction counter: two writes elsewhere between two of this row leave no trace in it', async (t) => {
    const url = await create()
    const first = String((await get(url)).headers.etag)
    await create()
    await create()
    const second = String((await write(url)).headers.etag)
    for (const etag of [first, second]) t.match(etag, STRONG, `${etag}: no number to subtract from the next`)
    const xmin = Number(await xminOf(app, table, url))
    const bytes = Buffer.from(second.slice(1, -1), 'base64url')
    const inBytes = [...Array(13).keys()].some((at) => bytes.readUInt32BE(at) === xmin || bytes.readUInt32LE(at) === xmin)
    t.notOk(inBytes, `the row's transaction id (${xmin}) is not in its ETag's bytes either`)
    const other = String((await get(await create())).headers.etag)
    const alike = [...other].filter((char, i) => second[i] === char).length
    t.ok(alike <= 8, `the next row's ETag is unrelated to this one's (${alike} of 24 characters alike)`)
  })

  t.test('a write with the current ETag succeeds and answers the new one; the old one is then 412', async (t) => {
    const url = await create()
    const etag = String((await get(url)).headers.etag)
    const changed = await write(url, { 'if-match': etag })
    t.equal(changed.statusCode, 200)
    const next = String(changed.headers.etag)
    t.match(next, STRONG)
    t.not(next, etag, 'a write changes the ETag')
    const now = await get(url)
    t.equal(now.headers.etag, next, 'the ETag of the write is the one a GET sees')
    for (const field of [etag, `W/${next}`, '"0"', 'not-a-tag']) {
      assertProblem(t, await write(url, { 'if-match': field }), 412, 'PRECONDITION_FAILED', `If-Match: ${field}`)
    }
    t.same((await get(url)).json(), now.json(), 'nothing of the refused writes was written')
    t.equal((await write(url, { 'if-match': `"0", ${next}` })).statusCode, 200, 'any ETag of the list may match')
    t.equal((await write(url, { 'if-match': '*' })).statusCode, 200, '* matches any version')
    t.equal((await write(url)).statusCode, 200, 'without If-Match the write is unconditional')
  })

  t.test('of two writers with one ETag, exactly one wins', async (t) => {
    const url = await create()
    for (let round = 1; round <= 5; round++) {
      const etag = String((await get(url)).headers.etag)
      const answers = await Promise.all([write(url, { 'if-match': etag }), write(url, { 'if-match': etag })])
      t.same(answers.map((res) => res.statusCode).sort(), [200, 412], `round ${round}`)
      const winner = answers.find((res) => res.statusCode === 200)!
      t.equal((await get(url)).headers.etag, winner.headers.etag, `round ${round}: the row is the winner's`)
    }
  })

  if (deletes) {
    t.test('DELETE with a stale ETag is 412 and keeps the row; a missing row is 404 whatever If-Match says', async (t) => {
      const url = await create()
      const etag = String((await get(url)).headers.etag)
      await write(url)
      assertProblem(t, await remove(url, { 'if-match': etag }), 412, 'PRECONDITION_FAILED')
      t.equal((await get(url)).statusCode, 200, 'still there')
      const current = String((await get(url)).headers.etag)
      t.equal((await remove(url, { 'if-match': current })).statusCode, 204)
      t.equal((await remove(url, { 'if-match': current })).statusCode, 404)
      t.equal((await write(url, { 'if-match': current })).statusCode, 404)
    })
  }
}

/** With REQUIRE_IF_MATCH, a write without If-Match is 428; reads and conditional writes go on. */
export async function requiredIfMatchTests (t: Test, app: App, target: ConditionalTarget) {
  const { create, change, method = 'PATCH', headers = {}, deletes = true } = target
  const url = await create()
  assertProblem(t, await app.inject({ method, url, headers, payload: change() }), 428, 'PRECONDITION_REQUIRED', `${method} without If-Match`)
  if (deletes) assertProblem(t, await app.inject({ method: 'DELETE', url, headers }), 428, 'PRECONDITION_REQUIRED', 'DELETE without If-Match')
  const read = await app.inject({ method: 'GET', url, headers })
  t.equal(read.statusCode, 200, 'reads need no condition')
  const etag = String(read.headers.etag)
  const written = await app.inject({ method, url, headers: { ...headers, 'if-match': etag }, payload: change() })
  t.equal(written.statusCode, 200, 'a write with If-Match goes on')
  if (deletes) t.equal((await app.inject({ method: 'DELETE', url, headers: { ...headers, 'if-match': String(written.headers.etag) } })).statusCode, 204)
}
