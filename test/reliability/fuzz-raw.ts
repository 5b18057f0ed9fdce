import { connect } from 'node:net'
import fc from 'fast-check'
import type { Answer } from './fuzz-contract.js'
import type { Operation } from './fuzz-openapi.js'
import { toJson, valid } from './fuzz-values.js'

/**
 * Sends bytes on a new connection, half-closes it (so a request cut short ends there), and
 * collects what the server writes until it closes the connection or `ms` pass.
 */
export function exchange (port: number, bytes: Buffer, ms = 10_000): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    const chunks: Buffer[] = []
    const timer = setTimeout(() => socket.destroy(), ms)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    // A reset is one way for the server to refuse; what arrived before it still counts.
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks))
    })
    socket.end(bytes)
  })
}

function unchunk (text: string): { body: string, rest: string } {
  let body = ''
  let rest = text
  for (;;) {
    const eol = rest.indexOf('\r\n')
    const size = parseInt(rest.slice(0, eol), 16)
    if (eol < 0 || Number.isNaN(size)) return { body, rest: '' }
    body += rest.slice(eol + 2, eol + 2 + size)
    rest = rest.slice(eol + 4 + size)
    if (size === 0) return { body, rest }
  }
}

/** The HTTP/1.1 responses in what a server wrote, in order. */
export function parseResponses (data: Buffer): Answer[] {
  const answers: Answer[] = []
  let rest = data.toString('latin1')
  while (rest.startsWith('HTTP/')) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) break
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n')
    const headers = Object.fromEntries(lines.map((line) => {
      const colon = line.indexOf(':')
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
    }))
    rest = rest.slice(end + 4)
    let body: string
    if (headers['transfer-encoding'] === 'chunked') {
      ({ body, rest } = unchunk(rest))
    } else {
      const length = Number(headers['content-length'] ?? 0)
      body = rest.slice(0, length)
      rest = rest.slice(length)
    }
    answers.push({ statusCode: Number(statusLine.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8') })
  }
  return answers
}

const bytes = (...parts: Array<string | Buffer | number[]>) =>
  Buffer.concat(parts.map((part) => typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part)))

const head = (line: string, headers: string[]) => `${line}\r\nHost: 127.0.0.1\r\n${headers.map((header) => `${header}\r\n`).join('')}\r\n`

const JSON_HEADER = 'Content-Type: application/json'

const post = (path: string, body: Buffer, headers = [JSON_HEADER]) =>
  bytes(head(`POST ${path} HTTP/1.1`, [...headers, `Content-Length: ${body.length}`, 'Connection: close']), body)

/** Byte sequences that are not UTF-8: a lone continuation, an overlong NUL, a CESU surrogate, past U+10FFFF, cut short. */
const BAD_UTF8 = [[0xff], [0xfe, 0xff], [0x80], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xf0, 0x9f, 0x98]]

const chunked = (body: Buffer, cuts: number[]) => {
  const bounds = [0, ...cuts.map((cut) => cut % (body.length + 1)).sort((a, b) => a - b), body.length]
  const pieces = bounds.slice(1).map((end, i) => body.subarray(bounds[i], end)).filter((piece) => piece.length > 0)
  return bytes(...pieces.flatMap((piece) => [`${piece.length.toString(16)}\r\n`, piece, '\r\n']), '0\r\n\r\n')
}

/**
 * What inject cannot send: bytes that are not UTF-8, framing that lies (Content-Length against
 * the body, chunked encoding), and request heads that do not parse.
 */
export function fixedCases (bodyLimit: number): Array<[string, Buffer]> {
  const record = Buffer.from('{"title":"raw","description":"bytes"}')
  const over = Buffer.from(`{"title":"${'x'.repeat(bodyLimit)}"}`)
  const cl = (value: string, body: Buffer = record) => bytes(head('POST /api/v1/records/ HTTP/1.1', [JSON_HEADER, `Content-Length: ${value}`]), body)
  const te = (value: string, body: string) => bytes(head('POST /api/v1/records/ HTTP/1.1', [JSON_HEADER, `Transfer-Encoding: ${value}`]), body)
  const get = (target: string, headers: string[] = ['Connection: close']) => bytes(head(`GET ${target} HTTP/1.1`, headers))
  return [
    ...BAD_UTF8.map((seq) => [seq, seq.map((byte) => byte.toString(16)).join(' ')] as const).flatMap(([seq, hex]): Array<[string, Buffer]> => [
      [`bytes ${hex} in a JSON string`, post('/api/v1/records/', bytes('{"title":"a', seq, 'b"}'))],
      [`bytes ${hex} as a JSON key`, post('/api/v1/items', bytes('{"', seq, '":1,"name":"n","price":1}'))],
      [`bytes ${hex} in a login form`, post('/api/v1/auth/login', bytes('username=', seq, '&password=', seq), ['Content-Type: application/x-www-form-urlencoded'])],
      [`bytes ${hex} in a path id`, get(bytes('/api/v1/items/', seq).toString('latin1'))],
      [`bytes ${hex} in a query`, get(bytes('/api/v1/items?q=', seq).toString('latin1'))],
      [`bytes ${hex} in a bearer token`, get('/api/v1/users/me', ['Connection: close', bytes('Authorization: Bearer ', seq).toString('latin1')])]
    ]),
    ['Content-Length longer than the body', cl(String(record.length + 10))],
    ['Content-Length shorter than the body', cl(String(record.length - 5))],
    ['Content-Length 0 with a body', cl('0')],
    ['Content-Length -1', cl('-1')],
    ['Content-Length abc', cl('abc')],
    ['Content-Length 1e3', cl('1e3')],
    ['Content-Length of 30 digits', cl('9'.repeat(30))],
    ['Content-Length over BODY_LIMIT, no body sent', cl(String(bodyLimit + 1), Buffer.alloc(0))],
    ['a body over BODY_LIMIT', post('/api/v1/records/', over)],
    ['two different Content-Lengths', bytes(head('POST /api/v1/records/ HTTP/1.1', [JSON_HEADER, 'Content-Length: 5', `Content-Length: ${record.length}`]), record)],
    ['Content-Length and chunked together', bytes(head('POST /api/v1/records/ HTTP/1.1', [JSON_HEADER, `Content-Length: ${record.length}`, 'Transfer-Encoding: chunked']), chunked(record, [5]))],
    ['chunked, split in three', bytes(head('POST /api/v1/records/ HTTP/1.1', [JSON_HEADER, 'Transfer-Encoding: chunked', 'Connection: close']), chunked(record, [3, 17]))],
    ['chunked over BODY_LIMIT', bytes(head('POST /api/v1/records/ HTTP/1.1', [JSON_HEADER, 'Transfer-Encoding: chunked']), chunked(over, [1000, 70000]))],
    ['chunk size zz', te('chunked', 'zz\r\n{}\r\n0\r\n\r\n')],
    ['chunk size past the data', te('chunked', 'ffff\r\n{}\r\n')],
    ['chunk without its last chunk', te('chunked', '2\r\n{}\r\n')],
    ['chunk extension garbage', te('chunked', '2;\u0000=\u0001\r\n{}\r\n0\r\n\r\n')],
    ['Transfer-Encoding gzip, chunked', te('gzip, chunked', '2\r\n{}\r\n0\r\n\r\n')],
    ['Transfer-Encoding identity', te('identity', '{}')],
    ['Content-Encoding gzip on plain JSON', post('/api/v1/records/', record, [JSON_HEADER, 'Content-Encoding: gzip'])],
    ['a header section over 16 KiB', get('/api/v1/health', ['Connection: close', `X-Big: ${'a'.repeat(20_000)}`])],
    ['a request target over 16 KiB', get(`/api/v1/items?q=${'a'.repeat(20_000)}`)],
    ['NUL in a header value', get('/api/v1/health', ['Connection: close', 'X-Nul: a\u0000b'])],
    ['a header without a colon', get('/api/v1/health', ['Connection: close', 'NoColon'])],
    ['a space before the colon', get('/api/v1/health', ['Connection: close', 'Authorization : Bearer x'])],
    ['an obs-fold continuation line', get('/api/v1/users/me', ['Connection: close', 'Authorization: Bearer', ' x.y.z'])],
    ['bare LF line endings', Buffer.from('GET /api/v1/health HTTP/1.1\nHost: 127.0.0.1\nConnection: close\n\n')],
    ['absolute-form target', get('http://127.0.0.1/api/v1/health')],
    ['asterisk-form OPTIONS', Buffer.from('OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')],
    ['CONNECT authority-form', Buffer.from('CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')],
    ['HTTP/1.0 without Host', Buffer.from('GET /api/v1/health HTTP/1.0\r\n\r\n')],
    ['HTTP/2 preface', Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')],
    ['HTTP/9.9', Buffer.from('GET /api/v1/health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n')],
    ['a lower-case method', Buffer.from('get /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')],
    ['an unknown method', Buffer.from('FOO /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')],
    ['no HTTP version', Buffer.from('GET /api/v1/health\r\n\r\n')],
    ['a target without a slash', get('api/v1/health')],
    ['Expect: 100-continue', post('/api/v1/records/', record, [JSON_HEADER, 'Expect: 100-continue'])],
    ['Expect: something else', post('/api/v1/records/', record, [JSON_HEADER, 'Expect: 200-ok'])],
    ['100 pipelined requests', Buffer.from(Array.from({ length: 100 }, () => 'GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n').join(''))],
    ['TLS client hello', Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03])],
    ['nothing at all', Buffer.alloc(0)]
  ]
}

/** JSON routes without path parameters: the ones a raw body reaches without knowing an id. */
export const rawTargets = (ops: Operation[]) =>
  ops.filter((op) => op.method === 'POST' && op.pathParams.length === 0 && op.body?.contentTypes.includes('application/json'))

/** A valid body of one of the routes, with bad bytes spliced in and framed honestly, falsely or chunked. */
export function generatedCase (targets: Operation[]): fc.Arbitrary<Buffer> {
  return fc.constantFrom(...targets).chain((op) => fc.record({
    body: valid(op.body?.schema ?? {}).map((value) => Buffer.from(toJson(value))),
    splices: fc.array(fc.tuple(fc.nat(), fc.oneof(fc.constantFrom(...BAD_UTF8), fc.uint8Array({ minLength: 1, maxLength: 4 }).map((array) => [...array]))), { maxLength: 3 }),
    framing: fc.oneof(fc.constant<'exact' | 'chunked'>('exact'), fc.constant<'exact' | 'chunked'>('chunked'), fc.integer({ min: -20, max: 20 })),
    cuts: fc.array(fc.nat(), { maxLength: 4 })
  }).map(({ body, splices, framing, cuts }) => {
    let payload = body
    for (const [at, seq] of splices) {
      const i = at % (payload.length + 1)
      payload = Buffer.concat([payload.subarray(0, i), Buffer.from(seq), payload.subarray(i)])
    }
    const line = `POST ${op.path} HTTP/1.1`
    if (framing === 'chunked') return bytes(head(line, [JSON_HEADER, 'Transfer-Encoding: chunked', 'Connection: close']), chunked(payload, cuts))
    const length = framing === 'exact' ? payload.length : Math.max(0, payload.length + framing)
    return bytes(head(line, [JSON_HEADER, `Content-Length: ${length}`, 'Connection: close']), payload)
  }))
}
