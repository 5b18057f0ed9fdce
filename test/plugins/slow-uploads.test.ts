import type { IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { build, captureLogs } from '../support/app.js'
import { httpRequest } from '../support/http.js'
import { until } from '../support/until.js'

const ITEMS = '/api/v1/items'
const LOGIN_FORM = { grant_type: 'password', username: 'ada@example.com', password: 'correct horse battery' }

/** A listening app; its base URL, and how many requests the server has read the head of. */
async function listening (t: Test, settings: Parameters<typeof build>[1], options: Parameters<typeof build>[2] = {}) {
  const app = await build(t, settings, options)
  const heads = { posts: 0 }
  app.server.on('request', (request: IncomingMessage) => { if (request.method === 'POST') heads.posts++ })
  // A test that fails leaves requests open, which would keep the app from closing.
  app.addHook('preClose', async () => app.server.closeAllConnections())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return { app, port, base: `http://127.0.0.1:${port}`, heads }
}

/** A socket that sends a POST's head and the first bytes of its body, then nothing: what it read, once closed. */
function stalledUpload (t: Test, port: number, length = 100) {
  const socket = connect(port, '127.0.0.1', () => {
    socket.write(`POST ${ITEMS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n{"name":`)
  })
  t.teardown(() => { socket.destroy() })
  let answer = ''
  socket.setEncoding('latin1').on('data', (chunk: string) => { answer += chunk }).on('error', () => {})
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(answer)))
  return { socket, closed }
}

/** An idle connection, open once the server has it. */
function idle (t: Test, port: number) {
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => { socket.destroy() })
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  return { socket, closed }
}

/** `promise`, or a failure naming `what` after `ms`. */
const within = <T>(what: string, promise: Promise<T>, ms = 10_000) => Promise.race([
  promise,
  sleep(ms, undefined, { ref: false }).then(() => { throw new Error(`gave up after ${ms} ms waiting for ${what}`) })
])

const openConnections = (server: { getConnections: (callback: (error: Error | null, count: number) => void) => void }) =>
  new Promise<number>((resolve, reject) => server.getConnections((error, count) => error ? reject(error) : resolve(count)))

/** Waits until the server has `count` connections open. */
async function serverHolds (server: Parameters<typeof openConnections>[0], count: number) {
  for (const deadline = Date.now() + 10_000; await openConnections(server) !== count; await sleep(20)) {
    if (Date.now() > deadline) throw new Error(`the server never held ${count} connections`)
  }
}

t.test('uploads that stall their bodies hold no request slot: reads and logins are answered, and the uploads end with 408', async (t) => {
  const { port, base, heads } = await listening(t, { OVERLOAD_MAX_IN_FLIGHT: 20, BODY_TIMEOUT_SECONDS: 2, MAX_CONNECTIONS_PER_ADDRESS: 0 })
  const { status } = await httpRequest(base, '/api/v1/auth/register', { json: { email: 'ada@example.com', password: LOGIN_FORM.password } })
  t.equal(status, 201, 'an account to log in to')
  const postsBefore = heads.posts

  // Half as many again as the requests in progress the server takes.
  const uploads = Array.from({ length: 30 }, () => stalledUpload(t, port))
  await until('the server to have read every upload\'s head', () => heads.posts - postsBefore === uploads.length || undefined, 10_000)

  const reads = await Promise.all(Array.from({ length: 10 }, () => httpRequest(base, `${ITEMS}?limit=1`)))
  const login = await httpRequest(base, '/api/v1/auth/login', { form: LOGIN_FORM })
  t.comment(`while the uploads stall: reads ${reads.map((read) => read.status).join(',')}; login ${login.status}`)
  t.same(reads.map((read) => read.status), Array(10).fill(200), 'every read is answered')
  t.equal(login.status, 200, 'and a login')
  t.equal(uploads.filter(({ socket }) => socket.destroyed).length, 0, 'while every upload was still open')

  const answers = await within('the stalled uploads to end', Promise.all(uploads.map((upload) => upload.closed)), 15_000)
  t.comment(`the uploads ended with: ${[...new Set(answers.map((answer) => answer.split('\r\n')[0]))].join(', ')}`)
  for (const answer of answers) {
    t.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/, 'each upload is answered 408')
    t.match(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { status: 408, code: 'REQUEST_TIMEOUT', detail: 'The request body did not arrive within 2 s' })
  }

  // Its head first, then, once the server has read it, a body of many chunks: read through the timer's stream.
  const postsNow = heads.posts
  const body = JSON.stringify({ name: 'in time', price: 1 }) + ' '.repeat(256 * 1024)
  const upload = stalledUpload(t, port, body.length)
  await until('the server to have read its head', () => heads.posts > postsNow || undefined, 10_000)
  upload.socket.write(body.slice('{"name":'.length))
  t.match(await within('the upload to be answered', upload.closed), /^HTTP\/1\.1 201 Created\r\n/, 'an upload whose body arrives in time is served')
})

t.test('connections past MAX_CONNECTIONS_PER_ADDRESS from one address are closed at once, until one of its own closes', async (t) => {
  const { app, port, base } = await listening(t, { MAX_CONNECTIONS_PER_ADDRESS: 3 })
  const held = Array.from({ length: 3 }, () => idle(t, port))
  await serverHolds(app.server, 3)
  const extra = idle(t, port)
  await within('a fourth connection to be closed', extra.closed)
  t.pass('a fourth connection is closed by the server')
  t.equal(await openConnections(app.server), 3, 'the server holds three')

  held[0]?.socket.destroy()
  await held[0]?.closed
  let answer
  for (const deadline = Date.now() + 10_000; answer === undefined && Date.now() < deadline;) {
    answer = await httpRequest(base, `${ITEMS}?limit=1`).catch(() => undefined)
  }
  t.equal(answer?.status, 200, 'once one closes, the address is served again')
})

t.test('behind a proxy (TRUST_PROXY) connections are not capped per address: the socket\'s peer is the proxy', async (t) => {
  const logs = captureLogs()
  const { app, base, port } = await listening(t, { MAX_CONNECTIONS_PER_ADDRESS: 1, TRUST_PROXY: true }, { logger: logs.logger })
  idle(t, port)
  await serverHolds(app.server, 1)
  t.equal((await httpRequest(base, `${ITEMS}?limit=1`)).status, 200, 'a second connection is served')
  t.ok(logs.lines.some((line) => String(line.msg).includes('MAX_CONNECTIONS_PER_ADDRESS is not applied')), 'the boot says so')
})
