import { connect } from 'node:net'
import t from 'tap'
import { LINGER } from '../../http/problems.js'
import { build } from '../support/app.js'

const BODY_LIMIT = 1024 * 1024
const app = await build(t, { BODY_LIMIT })
await app.listen({ port: 0, host: '127.0.0.1' })
const { port } = app.server.address() as { port: number }
const url = `http://127.0.0.1:${port}/api/v1/items`
const twoMegabytes = JSON.stringify({ name: 'x'.repeat(2 * BODY_LIMIT), price: 1 })

/** A POST of a body over BODY_LIMIT through Node's fetch: the status it read, or the error it got instead. */
async function postTooLarge (): Promise<number | string> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: twoMegabytes })
    const body = await res.json() as { code: string }
    return body.code === 'BODY_TOO_LARGE' ? res.status : `${res.status} ${body.code}`
  } catch (err) {
    return String((err as { cause?: { code?: string } }).cause?.code ?? err)
  }
}

t.test('fetch reads the 413 of a body over BODY_LIMIT, 200 times in a row and 200 times 20 at once', async (t) => {
  const inTurn: Array<number | string> = []
  for (let i = 0; i < 200; i++) inTurn.push(await postTooLarge())
  t.same(inTurn.filter((outcome) => outcome !== 413), [], 'one after the other')
  const atOnce: Array<number | string> = []
  for (let i = 0; i < 10; i++) atOnce.push(...await Promise.all(Array.from({ length: 20 }, postTooLarge)))
  t.same(atOnce.filter((outcome) => outcome !== 413), [], `under load: ${atOnce.filter((outcome) => outcome !== 413).join(', ')}`)
})

/** A raw client that sends the head and then the body in chunks, as slowly as the socket takes them, until told to stop. */
function rawClient (contentLength: number, sending = contentLength) {
  const socket = connect(port, '127.0.0.1')
  let answer = ''
  let written = 0
  const chunk = Buffer.alloc(64 * 1024, 'x')
  const done = new Promise<{ answer: string, written: number, error?: string }>((resolve) => {
    socket.on('data', (data) => {
      answer += data.toString()
      // The whole answer, and the whole body sent: the connection stays open for another request.
      if (written >= sending && /\r\n\r\n\{.*\}$/s.test(answer)) socket.destroy()
    })
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ answer, written, error: err.code }))
    socket.on('close', () => resolve({ answer, written }))
  })
  socket.on('connect', async () => {
    socket.write(`POST /api/v1/items HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`)
    while (written < sending && !socket.destroyed) {
      written += chunk.length
      if (!socket.write(chunk)) await new Promise((resolve) => { socket.once('drain', resolve); socket.once('close', resolve) })
    }
    if (/\r\n\r\n\{.*\}$/s.test(answer)) socket.destroy()
  })
  return done
}

t.test('a raw socket that keeps writing its whole body reads the 413 and no reset', async (t) => {
  for (let i = 0; i < 20; i++) {
    const { answer, written, error } = await rawClient(3 * BODY_LIMIT)
    t.equal(error, undefined, 'no reset')
    t.match(answer, /^HTTP\/1\.1 413 Payload Too Large\r\n/)
    t.notMatch(answer, /\r\nconnection: close\r\n/i, 'the connection stays: the body is read to its end')
    t.equal(written, 3 * BODY_LIMIT)
  }
})

t.test('a body far over the bound is cut off; one under it is read to its end', async (t) => {
  const over = await rawClient(4 * LINGER.bytes)
  t.match(over.answer, /^HTTP\/1\.1 413 /, 'the 413 is sent')
  t.ok(over.written < 4 * LINGER.bytes, `then the connection is cut (after ${over.written} of ${4 * LINGER.bytes} bytes)`)
  const under = await rawClient(LINGER.bytes - 1024 * 1024)
  t.equal(under.error, undefined)
  t.equal(under.written, LINGER.bytes - 1024 * 1024, 'every byte written')
  t.match(under.answer, /^HTTP\/1\.1 413 /)
})
