import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import { drizzle as onPglite } from 'drizzle-orm/pglite'
import { drizzle as onPostgres } from 'drizzle-orm/postgres-js'
import t from 'tap'
import type { App } from '../../../app.js'
import type { Database } from '../../../db/client.js'
import { createResourceLister } from '../../../db/resource-lists.js'
import { MAX_SEARCH_LENGTH, MAX_SEARCH_WORDS, RANKED_MATCHES, searchDocument, searchIndexName, searchTerms } from '../../../db/resource-search.js'
import { buildResourceTable } from '../../../db/resource-table.js'
import { resolveResourceOptions } from '../../../routes/resources/options.js'
import { readFields } from '../../../schemas/fields.js'
import { newAccount, superuser } from '../../support/app.js'
import { rowsOf } from '../../support/database.js'
import { buildResources } from '../../support/resources.js'

const NoteFields = Type.Object({
  title: Type.String(),
  body: Type.Optional(Type.String()),
  status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('done')])),
  priority: Type.Optional(Type.Integer()),
  tags: Type.Optional(Type.Array(Type.String())),
  secret: Type.Optional(Type.String({ writeOnly: true }))
})

const app = await buildResources(t, [
  { name: 'notes', fields: NoteFields, search: ['title', 'body', 'status'] },
  { name: 'diaries', fields: NoteFields, owner: true, search: ['title', 'body'] },
  { name: 'plain', fields: NoteFields }
])
const NOTES = '/api/v1/notes/'

interface Note { id: number, title: string, body?: string }

async function create (payload: Record<string, unknown>, url = NOTES, headers: Record<string, string> = {}): Promise<Note> {
  const res = await app.inject({ method: 'POST', url, payload, headers })
  if (res.statusCode !== 201) throw new Error(`POST ${url}: ${res.statusCode} ${res.payload}`)
  return res.json()
}

async function list (query: string, url = NOTES, headers: Record<string, string> = {}) {
  const res = await app.inject({ method: 'GET', url: `${url}?${query}`, headers })
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.payload}`)
  return res
}

const titles = async (query: string, url?: string, headers?: Record<string, string>) =>
  (await list(query, url, headers)).json().map((note: Note) => note.title) as string[]

const q = (text: string) => `q=${encodeURIComponent(text)}`

/** The next page's URL of a Link header, if there is one. */
const linked = (link: unknown): string | undefined => /^<([^>]+)>; rel="next"$/.exec(String(link ?? ''))?.[1]

// Created body match first: by id alone it would come first, so only the rank can put the title match before it.
await create({ title: 'Kitchen shelf', body: 'rests on a stone plinth', status: 'open', priority: 2 })
await create({ title: 'Garden plinth', body: 'granite, under the sundial', status: 'done', priority: 1 })
await create({ title: 'Plinth of the statue', body: 'marble plinth, polished', status: 'open', priority: 3 })
await create({ title: 'Shopping list', body: 'bread, milk', status: 'open', priority: 1, tags: ['errands', 'weekly'] })
await create({ title: 'Secret recipe', secret: 'saffron', status: 'open' })

t.test('ranked: a title match outranks a body match, more matches rank higher, ties go by id', async (t) => {
  t.same(await titles(q('plinth')), ['Plinth of the statue', 'Garden plinth', 'Kitchen shelf'])
  t.same(await titles(q('stone plinth')), ['Kitchen shelf'], 'every word must match')
  t.same(await titles(q('"stone plinth"')), ['Kitchen shelf'], 'a phrase')
  t.same(await titles(q('"plinth stone"')), [], 'a phrase is in order')
  t.same(await titles(q('plinth -marble')), ['Garden plinth', 'Kitchen shelf'], '-word excludes')
  t.same(await titles(q('granite or milk')), ['Garden plinth', 'Shopping list'], 'or gives alternatives')
  t.same(await titles(q('PLINTH')), ['Plinth of the statue', 'Garden plinth', 'Kitchen shelf'], 'case-insensitive')
  t.same(await titles(q('done')), ['Garden plinth'], 'every search field is searched')
})

t.test('the documented order: the earliest field a word is in first, then how many times the words occur, then id', async (t) => {
  // Each later-ranked row is created first: by id alone it would come first.
  const thrice = await create({ title: 'nothing', body: 'zarf, zarf and zarf' })
  const once = await create({ title: 'a zarf', body: 'nothing' })
  t.same(await titles(q('zarf')), [once.title, thrice.title], 'one occurrence in the first field outranks three in the second')
  const inBody = await create({ title: 'other', body: 'yurt quib' })
  // Cover density ranked these apart: words far apart in the first field below the same words side by side in the second.
  const inTitle = await create({ title: 'yurt, then a long way on to quib' })
  t.same(await titles(q('yurt quib ')), [inTitle.title, inBody.title], 'two words in the first field outrank the same two in the second')
  const twice = await create({ title: 'zarf zarf' })
  const tie = await create({ title: 'zarf again' })
  t.same(await titles(q('zarf')), [twice.title, once.title, tie.title, thrice.title], 'then more occurrences, then the oldest')
})

t.test('a b or c is (a and b) or c; a or b c is a or (b and c); -word excludes wherever it stands', async (t) => {
  for (const title of ['wren', 'kite', 'lark', 'wren kite', 'wren lark', 'kite lark']) await create({ title, body: 'grouping' })
  const sorted = async (text: string) => (await titles(`${q(text)}&sort=title`))
  t.same(await sorted('wren kite or lark'), ['kite lark', 'lark', 'wren kite', 'wren lark'])
  t.same(await sorted('wren or kite lark'), ['kite lark', 'wren', 'wren kite', 'wren lark'])
  t.same(await sorted('wren or kite or lark '), ['kite', 'kite lark', 'lark', 'wren', 'wren kite', 'wren lark'])
  t.same(await sorted('grouping -wren or lark'), ['kite', 'kite lark', 'lark', 'wren lark'], 'grouping and not wren, or lark')
})

t.test('a search the index cannot serve is refused with 422 naming q: only excluded words, or too many words', async (t) => {
  const only = /^\/querystring\/q must have a word to find in every alternative: excluding words \(-word\) alone would read every row/
  const refused: Array<[string, RegExp]> = [
    ['-plinth', only], ['-plinth -marble', only], ['- plinth', only], ['-"stone plinth"', only],
    ['granite or -marble', only], ['-marble or granite', only], ['-plinth&count=exact', only], ['-plinth&sort=-id', only],
    [Array.from({ length: MAX_SEARCH_WORDS + 1 }, (_, i) => `w${i}`).join(' '), /^\/querystring\/q must have at most 16 words/],
    [`"${Array.from({ length: MAX_SEARCH_WORDS + 1 }, () => 'plinth').join(' ')}"`, /^\/querystring\/q must have at most 16 words/]
  ]
  for (const [text, detail] of refused) {
    const [words, ...rest] = text.split('&')
    const res = await app.inject({ method: 'GET', url: `${NOTES}?${q(words!)}${rest.map((part) => `&${part}`).join('')}` })
    t.equal(res.statusCode, 422, text.slice(0, 40))
    t.match(res.json(), { code: 'VALIDATION_FAILED', detail, errors: [{ path: '/querystring/q' }] }, text.slice(0, 40))
  }
  t.same(await titles(q('plinth -marble')), ['Garden plinth', 'Kitchen shelf'], 'a word to find and one to exclude')
  t.same(await titles(q('-!!!')), [], 'excluding no word at all: no words, nothing found')
  t.same(await titles(`${q('--plinth')}&sort=id`), ['Kitchen shelf', 'Garden plinth', 'Plinth of the statue'], 'excluded twice is included')
  t.equal((await list(q(Array.from({ length: MAX_SEARCH_WORDS }, () => 'plinth').join(' ')))).statusCode, 200, `${MAX_SEARCH_WORDS} words are fine`)
})

t.test('the last word is a prefix while it is being typed, from three letters on', async (t) => {
  t.same(await titles(q('plin')), ['Plinth of the statue', 'Garden plinth', 'Kitchen shelf'])
  t.same(await titles(q('shopp')), ['Shopping list'])
  t.same(await titles(q('shopp ')), [], 'a space after the word ends it')
  t.same(await titles(q('pl')), [], 'two letters match whole words only')
  t.same(await titles(q('garden plin')), ['Garden plinth'])
  t.same(await titles(q('"garden plin')), [], 'inside an open quote, a phrase of whole words')
  t.same(await titles(q('milk or gran')), ['Shopping list'], 'after or, a whole word: a prefix would make the alternative a requirement')
  t.same(searchTerms('plinth -mar'), { words: 'plinth -mar' }, 'an excluded word is whole')
  t.same(searchTerms('plinth - mar'), { words: 'plinth - mar' }, 'so is one after a lone -')
  t.same(searchTerms('milk or bread shel'), { words: 'milk or bread shel' }, 'with an or, no prefix: it would be required of every alternative')
  t.same(searchTerms('kitchen shel'), { words: 'kitchen ', prefix: 'shel' })
})

t.test('a search combines with filters, an explicit sort, the count, and offset', async (t) => {
  t.same(await titles(`${q('plinth')}&status=open`), ['Plinth of the statue', 'Kitchen shelf'])
  t.same(await titles(`${q('plinth')}&priority[lte]=2`), ['Garden plinth', 'Kitchen shelf'])
  t.same(await titles(`${q('plinth')}&sort=priority`), ['Garden plinth', 'Kitchen shelf', 'Plinth of the statue'], 'the sort asked for, not the rank')
  t.same(await titles(`${q('plinth')}&sort=-id`), ['Plinth of the statue', 'Garden plinth', 'Kitchen shelf'])
  const counted = await list(`${q('plinth')}&count=exact&limit=1`)
  t.equal(counted.headers['x-total-count'], '3', 'count=exact counts the matches')
  t.equal(counted.json().length, 1)
  t.same(await titles(`${q('plinth')}&offset=1&limit=1`), ['Garden plinth'])
})

t.test('stop characters match nothing, and a search of nothing is refused with 422', async (t) => {
  t.same(await titles(q('!!!')), [], 'only punctuation: no words, no rows, no error')
  t.same(await titles(q('& | ! ( ) : * <->')), [], 'tsquery operators are text here')
  t.same(await titles(q('plinth:*')), ['Plinth of the statue', 'Garden plinth', 'Kitchen shelf'], 'operators in the text are not syntax')
  t.same(await titles(q('a'.repeat(MAX_SEARCH_LENGTH))), [], `${MAX_SEARCH_LENGTH} characters are fine`)
  const cases: Array<[string, RegExp]> = [
    ['q=', /^\/querystring\/q must have something to search for/],
    ['q=%20%20%09', /^\/querystring\/q must have something to search for/],
    [q('é'.repeat(MAX_SEARCH_LENGTH + 1)), /^\/querystring\/q must be at most 256 characters/],
    ['q=plinth%00', /^\/querystring\/q must not contain NUL/],
    ['q=a&q=b', /^\/querystring\/q must be string/]
  ]
  for (const [query, detail] of cases) {
    const res = await app.inject({ method: 'GET', url: `${NOTES}?${query}` })
    t.equal(res.statusCode, 422, query.slice(0, 40))
    t.match(res.json().detail, detail, query.slice(0, 40))
  }
  const plain = await app.inject({ method: 'GET', url: `/api/v1/plain/?${q('plinth')}` })
  t.equal(plain.statusCode, 422, 'no search fields, no q')
  t.match(plain.json().errors[0], { path: '/querystring/q', message: /is not a filter/ })
})

t.test('a writeOnly field is never searched: what a search finds would tell its words', async (t) => {
  t.same(await titles(q('saffron')), [])
  t.throws(() => resolveResourceOptions({ name: 'leaky', fields: NoteFields, search: ['title', 'secret'] }),
    { message: /"leaky": search names "secret", a writeOnly field; searching it would tell its value/ })
  t.throws(() => resolveResourceOptions({ name: 'clash', fields: Type.Object({ q: Type.String() }), search: ['q'] }),
    { message: /search takes the query parameter q, which the field "q" filters on/ })
  t.throws(() => resolveResourceOptions({ name: 'twice', fields: NoteFields, search: ['title', 'title'] }), { message: /names a field twice/ })
  t.throws(() => resolveResourceOptions({ name: 'tagged', fields: NoteFields, search: ['tags'] }), { message: /"tags", a text\[\] field; search takes text fields/ })
})

t.test('cursors walk every page of a ranked search, across ties, and belong to their q', async (t) => {
  // Nine rows tie on rank, others rank above and below them.
  const made: Note[] = []
  for (let i = 0; i < 9; i++) made.push(await create({ title: `tally ${i}`, body: 'ledger' }))
  made.push(await create({ title: 'ledger ledger of accounts', body: 'the ledger' }))
  made.push(await create({ title: 'notebook', status: 'open', body: 'the ledger, ledger, ledger' }))
  const all = (await list(`${q('ledger')}&limit=100`)).json().map((note: Note) => note.id) as number[]
  t.equal(all.length, 11)
  t.equal(all[0], made[9]!.id, 'the title with most matches first')
  t.same(all.slice(2), made.slice(0, 9).map((note) => note.id), 'ties by id, oldest first')
  t.equal(all[1], made[10]!.id, 'then the body with three matches')
  for (const limit of [1, 2, 4]) {
    const walked: number[] = []
    let url: string | undefined = `${NOTES}?${q('ledger')}&limit=${limit}`
    while (url !== undefined) {
      const res = await list(url.split('?')[1]!)
      walked.push(...res.json().map((note: Note) => note.id))
      url = linked(res.headers.link)
      if (walked.length > all.length) break
    }
    t.same(walked, all, `pages of ${limit}: every row once, in rank order`)
  }
  const first = await list(`${q('ledger')}&limit=3`)
  const cursor = new URLSearchParams(String(first.headers.link).slice(1, -13).split('?')[1]).get('cursor')!
  t.same((await list(`${q('ledger')}&limit=3&cursor=${cursor}`)).json().map((note: Note) => note.id), all.slice(3, 6))
  const other = await app.inject({ method: 'GET', url: `${NOTES}?${q('tally')}&cursor=${cursor}` })
  t.equal(other.statusCode, 422, 'a cursor of another q is refused')
  t.match(other.json().errors[0], { path: '/querystring/cursor', message: /another sort/ })
  const bare = await app.inject({ method: 'GET', url: `${NOTES}?cursor=${cursor}` })
  t.equal(bare.statusCode, 422, 'and one of a search, without it')
})

t.test('a forged rank in a cursor is a 422, never a database error', async (t) => {
  const first = await list(`${q('ledger')}&limit=1`)
  const cursor = new URLSearchParams(String(first.headers.link).slice(1, -13).split('?')[1]).get('cursor')!
  const [fingerprint, , id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [string, number, number]
  for (const rank of [1e300, -1e300, 1e-50, 'NaN', null, '0.5', true]) {
    const forged = Buffer.from(JSON.stringify([fingerprint, rank, id])).toString('base64url')
    const res = await app.inject({ method: 'GET', url: `${NOTES}?${q('ledger')}&cursor=${forged}` })
    t.equal(res.statusCode, 422, `rank ${String(rank)}`)
  }
  const fine = Buffer.from(JSON.stringify([fingerprint, 0.5, id])).toString('base64url')
  t.equal((await app.inject({ method: 'GET', url: `${NOTES}?${q('ledger')}&cursor=${fine}` })).statusCode, 200, 'any real rank is a position')
})

t.test('owner mode: a search never finds another owner\'s rows', async (t) => {
  const DIARIES = '/api/v1/diaries/'
  const ada = await newAccount(app)
  const bob = await newAccount(app)
  await create({ title: 'Ada\'s plinth' }, DIARIES, ada.session.headers)
  await create({ title: 'Bob\'s plinth', body: 'plinth' }, DIARIES, bob.session.headers)
  const search = (headers: Record<string, string>, query = '') => titles(`${q('plinth')}&count=exact${query}`, DIARIES, headers)
  t.same(await search(ada.session.headers), ['Ada\'s plinth'])
  t.same(await search(bob.session.headers), ['Bob\'s plinth'])
  t.equal((await list(`${q('plinth')}&count=exact`, DIARIES, ada.session.headers)).headers['x-total-count'], '1', 'the count is of your own matches')
  t.same(await search(ada.session.headers, '&sort=-id'), ['Ada\'s plinth'])
  const root = await superuser(app, 'root-search@example.com')
  t.same(await search(root.session.headers), ['Bob\'s plinth', 'Ada\'s plinth'], 'a superuser searches every row, by rank')
  t.equal((await app.inject({ method: 'GET', url: `${DIARIES}?${q('plinth')}` })).statusCode, 401)
})

t.test('the OpenAPI document offers q where there are search fields, only there', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const parameter = (path: string) => (doc.paths[path].get.parameters as Array<{ name: string, schema: { maxLength?: number } }>).find((each) => each.name === 'q')
  t.match(parameter('/api/v1/notes'), { name: 'q', schema: { maxLength: MAX_SEARCH_LENGTH } })
  t.equal(parameter('/api/v1/plain'), undefined)
})

t.test('past RANKED_MATCHES matches, the newest are ranked; the count and an explicit sort see every match', async (t) => {
  const oldest = await create({ title: 'crowded crowded crowded' })
  await app.plinthDb.db.execute(sql`insert into notes (title, body) select 'filler ' || g, 'crowded' from generate_series(1, ${RANKED_MATCHES}::int) as g`)
  const first = await list(`${q('crowded')}&count=exact&limit=5`)
  t.equal(first.headers['x-total-count'], String(RANKED_MATCHES + 1), 'every match counted')
  t.notOk(first.json().some((note: Note) => note.id === oldest.id), 'the best match is older than the newest RANKED_MATCHES: not ranked')
  t.same((await list(`${q('crowded')}&sort=id&limit=1`)).json().map((note: Note) => note.id), [oldest.id], 'a sort asked for sees it')
  let walked = 0
  let url: string | undefined = `${NOTES}?${q('crowded')}&limit=400`
  while (url !== undefined && walked <= RANKED_MATCHES) {
    const res = await list(url.split('?')[1]!)
    walked += res.json().length
    url = linked(res.headers.link)
  }
  t.equal(walked, RANKED_MATCHES, 'the pages of a ranked search end with its window')
})

/** The app's connection through a Drizzle instance that records the statements and values it sends. */
function recording (app: App) {
  const queries: Array<{ query: string, params: unknown[] }> = []
  const logger = { logQuery: (query: string, params: unknown[]) => { queries.push({ query, params }) } }
  const $client = (app.plinthDb.db as unknown as { $client: never }).$client
  const db = app.plinthDb.driver === 'postgres' ? onPostgres({ client: $client, logger }) : onPglite({ client: $client, logger })
  return { db: db as unknown as Database, queries, $client: $client as unknown as { begin: (run: (tx: { unsafe: (query: string, params?: unknown[]) => Promise<unknown> }) => Promise<unknown>) => Promise<unknown> } }
}

t.test('the GIN index on the search document serves the search', { skip: app.plinthDb.driver !== 'postgres' && 'EXPLAIN of a plan on PostgreSQL only' }, async (t) => {
  const index = searchIndexName('notes')
  const present = rowsOf(await app.plinthDb.db.execute(sql`select 1 from pg_indexes where schemaname = current_schema() and indexname = ${index}`))
  // Until the table's DDL makes it, the test makes it, from the same expression.
  if (present.length === 0) await app.plinthDb.db.execute(sql.raw(`create index "${index}" on notes using gin ((${searchDocument(['title', 'body', 'status'])}))`))
  const recorder = recording(app)
  const fields = readFields(NoteFields)
  const lister = createResourceLister(recorder.db, buildResourceTable('notes', fields), Object.fromEntries(fields.map((field) => [field.name, field.kind])))
  const byId = [{ column: 'id', descending: true }]
  const cases: Array<[string, typeof byId]> = [['plinth', []], ['garden plin', []], ['plinth', byId]]
  for (const [text, sort] of cases) {
    const page = await lister({ filters: [], sort, limit: 10, offset: 0, count: true, search: { fields: ['title', 'body', 'status'], text } })
    t.ok(page.rows.length > 0, text)
    const [settings, ...statements] = recorder.queries.splice(0).filter(({ query }) => query.startsWith('select'))
    t.match(settings?.query, /^select set_config\('plan_cache_mode'/, 'planned for its values')
    t.equal(statements.length, 2, 'the rows and the count')
    for (const { query, params } of statements) {
      const plan = await recorder.$client.begin(async (tx) => {
        // A few rows: a sequential scan is cheaper, unless it is off.
        await tx.unsafe('set local enable_seqscan = off')
        await tx.unsafe(settings!.query, settings!.params)
        return tx.unsafe(`explain ${query}`, params)
      }) as Array<{ 'QUERY PLAN': string }>
      const explained = plan.map((line) => line['QUERY PLAN']).join('\n')
      t.match(explained, new RegExp(`Bitmap Index Scan on ${index}`), `${text}, ${sort.length > 0 ? 'by id' : 'ranked'}: ${query.slice(0, 20)}...`)
    }
  }
})
