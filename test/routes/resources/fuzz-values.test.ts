import { Type } from '@sinclair/typebox'
import fc from 'fast-check'
import t from 'tap'
import { buildResources } from '../../support/resources.js'

// Fixed, so a failure replays; small, so the file stays a few seconds in `npm test` on either database.
const SEED = 20261126
const RUNS = 100

/** A field of every kind, optional or nullable as resources allow. */
const FuzzFields = Type.Object({
  title: Type.String({ maxLength: 40 }),
  status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('done')])),
  size: Type.Optional(Type.Integer()),
  amount: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  flag: Type.Optional(Type.Boolean()),
  day: Type.Optional(Type.String({ format: 'date' })),
  at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  tags: Type.Optional(Type.Array(Type.String())),
  data: Type.Optional(Type.Unsafe<object>({ type: 'object' }))
})

const app = await buildResources(t, [{ name: 'fuzzed', fields: FuzzFields }])
const URL = '/api/v1/fuzzed/'

const padded = (value: number, length: number) => String(Math.abs(value)).padStart(length, '0')

// Text at the edges of what PostgreSQL stores: NUL, lone surrogates on either side of a pair, any code point.
const edgyText = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', '\udfff', 'é\ud800', '\udc00\ud800', '\u{1F600}', '%_\\', '"\'', 'x'.repeat(41)) },
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ maxLength: 12 })
)

// Calendar dates, valid and not, across and beyond four-digit years.
const edgyDate = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('0000-01-01', '0001-01-01', '9999-12-31', '10000-01-01', '-0001-01-01', '2024-02-29', '2026-02-29', '2026-1-1') },
  fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }))
    .map(([year, month, day]) => `${padded(year, 4)}-${padded(month, 2)}-${padded(day, 2)}`)
)

// Instants with every offset, separator, precision and leap second RFC 3339 (or nearly) allows.
const edgyInstant = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('0000-01-01T00:00:00Z', '9999-12-31T23:59:60Z', '9999-12-31T23:59:59.9995Z', '0001-01-01T00:00:00+00:01', '2026-01-01T00:00:00+16:00') },
  fc.tuple(
    edgyDate,
    fc.constantFrom('T', 't', ' ', '\u200a', '\t'),
    fc.tuple(fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 60 })),
    fc.string({ unit: fc.constantFrom('0', '5', '9'), maxLength: 14 }),
    fc.oneof(fc.constantFrom('Z', 'z', ''), fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 60 }), fc.boolean())
      .map(([sign, hours, minutes, colon]) => `${sign}${padded(hours, 2)}${colon ? ':' : ''}${padded(minutes, 2)}`))
  ).map(([day, separator, [h, m, s], fraction, offset]) =>
    `${day}${separator}${padded(h, 2)}:${padded(m, 2)}:${padded(s, 2)}${fraction ? `.${fraction}` : ''}${offset}`)
)

const edgyNumber = fc.oneof(
  fc.constantFrom(2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE, Number.MIN_VALUE, -0, 0.5),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true })
)

/** `{"a":{"a":...}}`, `depth` objects deep. */
const nested = (depth: number): object => {
  let value: object = {}
  for (let i = 1; i < depth; i++) value = { a: value }
  return value
}

const edgyObject = fc.oneof(
  fc.integer({ min: 1, max: 2000 }).map(nested),
  fc.dictionary(edgyText, fc.oneof(edgyText, edgyNumber, fc.jsonValue({ maxDepth: 3 })), { maxKeys: 4 }),
  fc.jsonValue({ maxDepth: 4 })
)

// Each field's own extremes, or any JSON value at all.
const fieldValues: Record<string, fc.Arbitrary<unknown>> = {
  title: edgyText,
  status: fc.oneof(fc.constantFrom('open', 'done', 'later'), edgyText),
  size: edgyNumber,
  amount: fc.oneof(edgyNumber, fc.constant(null)),
  flag: fc.oneof(fc.boolean(), fc.constant('true')),
  day: edgyDate,
  at: fc.oneof(edgyInstant, fc.constant(null)),
  tags: fc.array(edgyText, { maxLength: 4 }),
  data: edgyObject
}
const anyValue = fc.jsonValue({ maxDepth: 2 })
// One or two fields at a time on an otherwise valid body, so the others' 422s do not hide what the database does with them.
const edgyBody = fc.subarray(Object.keys(fieldValues), { minLength: 1, maxLength: 2 })
  .chain((names) => fc.record(Object.fromEntries(names.map((name) => [name, fc.oneof({ weight: 4, arbitrary: fieldValues[name]! }, anyValue)]))))
  .map((fields) => ({ title: 'fuzz', ...fields }))

const isServerError = (status: number) => status >= 500

/** An answer the property refuses: a 5xx, with what was sent. */
function check (what: string, answer: { statusCode: number, payload: string }) {
  if (isServerError(answer.statusCode)) throw new Error(`${what}: ${answer.statusCode} ${answer.payload.slice(0, 300)}`)
}

let steady = 0
/** Another client's create and update, made in the same turn as the fuzzed request: both must succeed. */
async function alongside<R extends { statusCode: number, payload: string }> (request: Promise<R>, rowId: number): Promise<R> {
  const title = `steady ${++steady}`
  const [answer, created, patched] = await Promise.all([
    request,
    app.inject({ method: 'POST', url: URL, payload: { title, size: steady, data: { steady } } }),
    app.inject({ method: 'PATCH', url: `${URL}${rowId}`, payload: { size: steady } })
  ])
  if (created.statusCode !== 201 || created.json().title !== title) throw new Error(`the other client's create: ${created.statusCode} ${created.payload.slice(0, 300)}`)
  if (patched.statusCode !== 200 || patched.json().size !== steady) throw new Error(`the other client's update: ${patched.statusCode} ${patched.payload.slice(0, 300)}`)
  return answer
}

const row = await app.inject({ method: 'POST', url: URL, payload: { title: 'the other client\'s row' } })
const otherRow = row.json().id as number
const target = await app.inject({ method: 'POST', url: URL, payload: { title: 'fuzzed row' } })
const fuzzedRow = target.json().id as number

t.test('no body of extreme values gets a 5xx, and another client\'s writes in the same batch succeed', async (t) => {
  const method = fc.constantFrom('POST', 'PUT', 'PATCH')
  await fc.assert(fc.asyncProperty(method, edgyBody, async (verb, body) => {
    const url = verb === 'POST' ? URL : `${URL}${fuzzedRow}`
    const answer = await alongside(app.inject({ method: verb, url, payload: body }), otherRow)
    check(`${verb} ${JSON.stringify(body).slice(0, 300)}`, answer)
  }), { seed: SEED, numRuns: RUNS })
  t.pass(`${RUNS} bodies`)
})

// Filter values as a query string carries them: the values above as text, numbers beyond any type, and bytes
// that are not UTF-8 (a lone surrogate's CESU-8 form, an overlong NUL).
const FILTERS = ['title', 'title[contains]', 'status[in]', 'size[gte]', 'amount[lt]', 'flag', 'day[in]', 'at[gt]', 'tags[contains]', 'id[in]', 'created_at[lte]', 'updated_at']
const percentEncoded = (text: string) => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')
const filterText = fc.oneof(
  edgyText.map(percentEncoded),
  edgyDate,
  edgyInstant.map(percentEncoded),
  edgyNumber.map(String),
  fc.constantFrom('1e400', '-1e400', 'NaN', 'Infinity', '2147483648', '0x10', '', ',', '%ED%A0%80', '%C0%80', '%FF', 'null', 'not_null')
)
const edgyQuery = fc.array(fc.tuple(fc.constantFrom(...FILTERS), fc.array(filterText, { minLength: 1, maxLength: 3 })), { minLength: 1, maxLength: 3 })
  .map((filters) => filters.map(([name, values]) => `${name}=${values.join(',')}`).join('&'))

t.test('no filter of extreme values gets a 5xx, and another client\'s writes at the same time succeed', async (t) => {
  await fc.assert(fc.asyncProperty(edgyQuery, fc.constantFrom('', '&sort=-at,day', '&count=exact'), async (query, extra) => {
    const answer = await alongside(app.inject({ method: 'GET', url: `${URL}?${query}${extra}` }), otherRow)
    check(`GET ?${query}${extra}`, answer)
  }), { seed: SEED, numRuns: RUNS })
  t.pass(`${RUNS} queries`)
})
