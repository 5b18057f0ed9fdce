import { connect } from 'node:net'
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { httpRequest } from '../support/http.js'
import { startServer } from '../support/server-process.js'

// server.ts: headers within 10 s, the whole request within 30 s, checked every 2 s.
const HEADERS_MS = 10_000
const REQUEST_MS = 30_000
const CHECK_MS = 2_000
// Slack for a busy machine; a server without these timeouts would hold the sockets for minutes.
const SLACK_MS = 5_000

/** Sends `bytes`, then stays silent: resolves with what the server wrote and when it closed the socket. */
function stall (port: number, bytes: string, maxMs: number) {
  const started = performance.now()
  return new Promise<{ answer: string, afterMs: number }>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes))
    let answer = ''
    const guard = setTimeout(() => { socket.destroy(); reject(new Error(`still open after ${maxMs} ms`)) }, maxMs)
    socket.setEncoding('latin1')
      .on('data', (chunk) => { answer += chunk })
      .on('close', () => { clearTimeout(guard); resolve({ answer, afterMs: performance.now() - started }) })
      .on('error', () => {})
  })
}

const body = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))

t.test('a client that stalls its headers or its body is answered 408 and cut off, while others are served', async (t) => {
  const server = startServer(t, { DATABASE_URL: 'memory://', SECRET_KEY: 'timeouts-test-secret-of-at-least-32-bytes' })
  const base = await server.listening
  const port = Number(new URL(base).port)

  const headers = stall(port, 'GET /api/v1/health HTTP/1.1\r\nHost: x\r\n', HEADERS_MS + CHECK_MS + SLACK_MS)
  const bodyStall = stall(port, 'POST /api/v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":',
    REQUEST_MS + CHECK_MS + SLACK_MS)
  t.equal((await httpRequest(base, '/api/v1/health')).status, 200, 'other clients are served meanwhile')

  const slowHeaders = await headers
  t.comment(`silent headers cut after ${slowHeaders.afterMs.toFixed(0)} ms`)
  t.match(slowHeaders.answer, /^HTTP\/1\.1 408 /, 'stalled headers: 408')
  t.match(body(slowHeaders.answer), { status: 408, code: 'REQUEST_TIMEOUT' }, 'as a problem document')
  t.ok(slowHeaders.afterMs >= HEADERS_MS - 500, 'not before the headers timeout')

  const slowBody = await bodyStall
  t.comment(`stalled body cut after ${slowBody.afterMs.toFixed(0)} ms`)
  t.match(slowBody.answer, /^HTTP\/1\.1 408 /, 'stalled body: 408')
  t.match(body(slowBody.answer), { status: 408, code: 'REQUEST_TIMEOUT' })

  t.equal((await httpRequest(base, '/api/v1/health')).status, 200, 'the server is still up')
  server.child.kill('SIGTERM')
  t.same(await server.exited, [0, null])
})
