import fc from 'fast-check'
import type { JsonSchema, Operation, Parameter } from './fuzz-openapi.js'
import { RawJson, anyValue, brokenObject, numericText, repeated, text, toJson, valid } from './fuzz-values.js'

/** A path segment: text sent as is, or an id of a record that exists (picked when sent). */
export type Segment = string | { live: number }

type Alg = 'HS256' | 'none' | 'HS512' | 'wrong-key'

/** Who the request claims to be; `forged` is a token of any claims, signed as `alg` says. */
export type Auth =
  | { kind: 'none' | 'user' | 'admin' | 'refresh-as-access' }
  | { kind: 'header', value: string }
  | { kind: 'forged', claims: Record<string, unknown>, alg: Alg }

export interface Payload {
  contentType?: string
  payload?: string
}

/** A body as sent, or `live`: the one body of this route that needs state (a refresh token, a password). */
export type Body = { live: true } | Payload

/** A request before the session resolves its live parts. */
export interface Draft {
  method: string
  segments: Segment[]
  /** Appended to the path: `''` or `/` when valid, `//`, `/..`, `%20`... when not. */
  suffix: string
  query: string
  auth: Auth
  body: Body
}

const HOSTILE_IDS = [
  '0', '-1', '1.5', '1e400', '1e3', '0x10', '2147483648', '-2147483649', '9'.repeat(19), '1'.repeat(99), '1'.repeat(101),
  '1'.repeat(400), 'NaN', 'Infinity', 'null', 'true', '[]', '{}', '1,2', '%00', '%ZZ', '%', '%2F', '%2e%2e', '..', '%ED%A0%80',
  '%F0%9F%98%80', '%C0%80', '%FF', '%20', '+1', '1%00', '1;drop', '$', '*', '~1'
]

// encodeURIComponent throws on an unpaired surrogate, which no URL can carry anyway.
const encode = (value: string) => encodeURIComponent(value.replace(/[\ud800-\udfff]/gu, '\ufffd'))

const segment = (param: Parameter): fc.Arbitrary<Segment> => fc.oneof(
  { weight: 3, arbitrary: fc.nat().map((live) => ({ live })) },
  { weight: 1, arbitrary: valid(param.schema).map(String) },
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_IDS) },
  { weight: 1, arbitrary: fc.oneof(numericText, text).map(encode) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 2000 }).map((length) => '7'.repeat(length)) }
)

const validSegment = (param: Parameter): fc.Arbitrary<Segment> =>
  fc.oneof({ weight: 4, arbitrary: fc.nat().map((live) => ({ live })) }, valid(param.schema).map(String))

const pair = (key: string, value: string) => `${encode(key)}=${encode(value)}`

/** A query string of the route's own parameters, each valid as text. */
const validQuery = (params: Parameter[]) =>
  fc.tuple(...params.map((param) => fc.option(valid(param.schema), { nil: undefined })))
    .map((values) => params.flatMap((param, i) => values[i] === undefined ? [] : [pair(param.name, String(values[i]))]).join('&'))

/** Repeated keys, bracket arrays, empty values, stray separators, unknown keys, raw bytes. */
function hostileQuery (params: Parameter[]) {
  const key = fc.oneof(fc.constantFrom(...params.map((param) => param.name), 'x', ''), text)
  const part = fc.oneof(
    fc.tuple(key, fc.oneof(numericText, text)).map(([name, value]) => pair(name, value)),
    fc.tuple(key, numericText).map(([name, value]) => `${encode(name)}[]=${encode(value)}&${encode(name)}[1]=${encode(value)}`),
    fc.tuple(key, fc.array(numericText, { minLength: 2, maxLength: 4 })).map(([name, values]) => values.map((value) => pair(name, value)).join('&')),
    key.map((name) => `${encode(name)}=`),
    key.map(encode),
    fc.constantFrom('&', '&&', '=', '==', '%', '%ZZ', '%00', '%ED%A0%80', '#', '?', ';', 'a=1;b=2', '+', '%2B'),
    fc.integer({ min: 100, max: 9000 }).map((length) => `q=${'a'.repeat(length)}`)
  )
  return fc.array(part, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('&'))
}

const claims = fc.record({
  sub: fc.oneof(fc.constantFrom('0', '-1', '1.5', '01', '2147483648', '99999999999', '', 'abc', ' 1'), fc.nat().map(String), anyValue),
  type: fc.oneof(fc.constantFrom('access', 'refresh'), anyValue),
  scopes: fc.oneof(fc.constant(['me']), anyValue),
  jti: fc.oneof(fc.uuid(), anyValue),
  exp: fc.oneof(fc.constantFrom(0, 1, 2 ** 31, 1e300, -1), fc.nat(), numericText),
  iat: fc.oneof(fc.nat(), anyValue)
}, { requiredKeys: [] })

const AUTH_HEADERS = ['Bearer', 'Bearer ', 'bearer x', 'Bearer a.b.c', 'Bearer a b', 'Basic dXNlcjpwYXNz', 'Token x', 'Bearer e30.e30.', '']

const badAuth: fc.Arbitrary<Auth> = fc.oneof(
  fc.constantFrom<Auth>({ kind: 'none' }, { kind: 'refresh-as-access' }),
  fc.oneof(fc.constantFrom(...AUTH_HEADERS), fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((value) => `Bearer ${value.replace(/[^ -~]/g, '')}`))
    .map((value): Auth => ({ kind: 'header', value })),
  fc.tuple(claims, fc.constantFrom<Alg>('HS256', 'none', 'HS512', 'wrong-key'))
    .map(([forged, alg]): Auth => ({ kind: 'forged', claims: forged, alg }))
)

const goodAuth = fc.constantFrom<Auth>({ kind: 'user' }, { kind: 'admin' })

const json = (contentType = 'application/json') => (value: unknown): Body => ({ contentType, payload: toJson(value) })
const form = (value: unknown): Body => ({
  contentType: 'application/x-www-form-urlencoded',
  payload: Object.entries(value as Record<string, unknown>).map(([key, item]) => pair(key, String(item))).join('&')
})

/** The bodies a route accepts: its schema, in each content type it takes. */
function validBody (op: Operation): fc.Arbitrary<Body> {
  if (!op.body) return fc.constant({})
  const value = valid(op.body.schema)
  return op.body.contentTypes.includes('application/x-www-form-urlencoded') ? fc.oneof(value.map(form), value.map(json())) : value.map(json())
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json; charset=utf-16', 'application/json; charset=latin1',
  'application/json;;', 'application/vnd.api+json', 'application/problem+json', 'text/plain', 'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded', 'multipart/form-data; boundary=xyz', 'multipart/form-data', 'application/xml',
  'application/octet-stream', '*/*', 'json', '', ';', 'application/json, text/plain', 'text/json'
]

const GARBAGE_JSON = [
  '', ' ', '{', '}', '[', '{"a":}', '[1,]', "{'a':1}", '\ufeff{}', 'nul', 'NaN', '1e400', '{"a":1}{"b":2}', '{"a":1} x',
  '/* c */ {}', '{"a":"\\u00"}', '{"a":"\\ud800"}', '"\\', '\u0000', '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}', 'undefined', '[]', '""', 'true', '0'
]

const MULTIPART = '--xyz\r\nContent-Disposition: form-data; name="title"\r\n\r\nhello\r\n--xyz--\r\n'

function hostileBody (op: Operation, bodyLimit: number): fc.Arbitrary<Body> {
  const schema: JsonSchema = op.body?.schema ?? { type: 'object' }
  const nested = fc.tuple(fc.integer({ min: 50, max: 100_000 }), fc.boolean()).map(([depth, arrays]) =>
    arrays ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth))
  return fc.oneof(
    { weight: 6, arbitrary: brokenObject(schema).map(json()) },
    { weight: 2, arbitrary: anyValue.map(json()) },
    { weight: 2, arbitrary: fc.constantFrom(...GARBAGE_JSON).map((payload) => ({ contentType: 'application/json', payload })) },
    // Valid JSON cut anywhere.
    {
      weight: 2,
      arbitrary: fc.tuple(valid(schema), fc.nat()).map(([value, at]) => {
        const whole = toJson(value)
        return { contentType: 'application/json', payload: whole.slice(0, at % Math.max(1, whole.length)) }
      })
    },
    { weight: 1, arbitrary: nested.map((payload) => ({ contentType: 'application/json', payload })) },
    { weight: 1, arbitrary: fc.tuple(valid(schema), nested).map(([value, deep]) => ({ contentType: 'application/json', payload: toJson({ ...value as object, deep: new RawJson(deep) }) })) },
    { weight: 3, arbitrary: fc.tuple(valid(schema), fc.constantFrom(...CONTENT_TYPES)).map(([value, contentType]) => ({ contentType, payload: toJson(value) })) },
    { weight: 1, arbitrary: fc.constantFrom(MULTIPART, 'title=a&description=b', 'a=%ZZ&&=&b[]=1&__proto__[x]=1').map((payload) => ({ contentType: payload.startsWith('--') ? 'multipart/form-data; boundary=xyz' : 'application/x-www-form-urlencoded', payload })) },
    { weight: 1, arbitrary: valid(schema).map((value) => ({ payload: toJson(value) })) },
    { weight: 1, arbitrary: fc.constant({ contentType: 'application/json' }) },
    { weight: 1, arbitrary: fc.constant({}) },
    // Up to and past BODY_LIMIT: a valid body padded with an unknown field (stripped when it fits).
    {
      weight: 1,
      arbitrary: fc.tuple(valid(schema), fc.integer({ min: -64, max: 64 }), repeated(1)).map(([value, delta, char]) => {
        const start = toJson({ ...value as object, pad: '' })
        const room = Math.max(0, bodyLimit - Buffer.byteLength(start) + delta)
        return json()({ ...value as object, pad: char.repeat(Math.ceil(room / Math.max(1, Buffer.byteLength(char)))) })
      })
    }
  )
}

/**
 * Every part valid; one part hostile, the parts that matter to this route more often; or every
 * part hostile at once.
 */
export function draftFor (op: Operation, { bodyLimit, liveBody }: { bodyLimit: number, liveBody: boolean }): fc.Arbitrary<Draft> {
  const parts = {
    method: { weight: 1, good: fc.constant(op.method), bad: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND') },
    segments: { weight: op.pathParams.length > 0 ? 4 : 0, good: fc.tuple(...op.pathParams.map(validSegment)), bad: fc.tuple(...op.pathParams.map(segment)) },
    suffix: { weight: 1, good: fc.constantFrom('', '/'), bad: fc.constantFrom('//', '/.', '/..', '/%2e', '/x', '%20', ';a=1') },
    query: { weight: op.query.length > 0 ? 4 : 1, good: validQuery(op.query), bad: hostileQuery(op.query) },
    auth: { weight: op.secured ? 4 : 1, good: op.secured ? goodAuth : fc.oneof(goodAuth, fc.constant<Auth>({ kind: 'none' })), bad: badAuth },
    body: {
      weight: op.body ? 8 : 1,
      good: liveBody ? fc.oneof(fc.constant<Body>({ live: true }), validBody(op)) : validBody(op),
      bad: hostileBody(op, bodyLimit)
    }
  }
  type Part = keyof typeof parts
  const names = Object.keys(parts) as Part[]
  const build = (hostile: (name: Part) => boolean) => fc.record(Object.fromEntries(
    names.map((name) => [name, hostile(name) ? parts[name].bad : parts[name].good])
  ) as { [K in Part]: fc.Arbitrary<Draft[K]> })
  return fc.oneof(
    { weight: 4, arbitrary: build(() => false) },
    ...names.filter((part) => parts[part].weight > 0).map((part) => ({ weight: parts[part].weight, arbitrary: build((name) => name === part) })),
    { weight: 2, arbitrary: build(() => true) }
  )
}
