import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import type { App } from '../../app.js'

/** One block of a text/event-stream as a client parses it: a comment, a retry hint, or an event's fields. */
export interface StreamBlock {
  event?: string
  id?: string
  data?: string
  retry?: string
  comment?: string
}

export interface OpenStream {
  status: number
  headers: IncomingHttpHeaders
  /** Every block received so far, in order. */
  blocks: StreamBlock[]
  /** The next block (from the first not yet taken) that `match` accepts; the blocks before it are taken too. */
  next (match?: (block: StreamBlock) => boolean, what?: string): Promise<StreamBlock>
  /** Resolves when the server ends the response: true for a clean end, false when the connection was cut. */
  ended: Promise<boolean>
  /** The body of an answer that is not a stream. */
  body: () => string
  close (): void
}

export function parseBlock (text: string): StreamBlock {
  const block: StreamBlock = {}
  for (const line of text.split('\n')) {
    if (line.startsWith(':')) {
      block.comment = line.slice(1).trim()
      continue
    }
    const colon = line.indexOf(':')
    const [field, value] = colon === -1 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')]
    if (field === 'data') block.data = block.data === undefined ? value : `${block.data}\n${value}`
    else if (field === 'event' || field === 'id' || field === 'retry') block[field] = value
  }
  return block
}

/** The app listening on 127.0.0.1 (port 0), closed by the app's own teardown; answers its base URL. */
export async function listening (app: App): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

/** A GET of an event stream over a real connection; the test's teardown closes it. */
export async function openStream (t: Test, url: string, headers: Record<string, string> = {}): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      res.setEncoding('utf8')
      let text = ''
      let raw = ''
      const blocks: StreamBlock[] = []
      let taken = 0
      const waiters: Array<() => void> = []
      const wake = () => { for (const waiter of waiters.splice(0)) waiter() }
      let cut = false
      const ended = new Promise<boolean>((resolve) => {
        res.once('end', () => resolve(!cut))
        res.once('aborted', () => { cut = true })
        res.once('error', () => { cut = true })
        res.once('close', () => { resolve(!cut && res.complete); wake() })
      })
      res.on('data', (chunk: string) => {
        raw += chunk
        text += chunk
        for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n')) {
          blocks.push(parseBlock(text.slice(0, end)))
          text = text.slice(end + 2)
        }
        wake()
      })
      let closed = false
      res.once('close', () => { closed = true })
      async function next (match: (block: StreamBlock) => boolean = () => true, what = 'a block'): Promise<StreamBlock> {
        for (;;) {
          while (taken < blocks.length) {
            const block = blocks[taken++]!
            if (match(block)) return block
          }
          if (closed) throw new Error(`the stream ended before ${what}; received ${JSON.stringify(blocks)}`)
          await new Promise<void>((resolve) => waiters.push(resolve))
        }
      }
      const stream = { status: res.statusCode!, headers: res.headers, blocks, next, ended, body: () => raw, close: () => req.destroy() }
      t.teardown(() => req.destroy())
      resolve(stream)
    })
    req.once('error', reject)
    req.end()
  })
}

/** Whether a block is an event (not a comment, a retry hint, or an id alone). */
export const isEvent = (block: StreamBlock) => block.data !== undefined

/** The next event of the stream, of this type when given. */
export const nextEvent = (stream: OpenStream, type?: string) =>
  stream.next((block) => isEvent(block) && (type === undefined || block.event === type), type === undefined ? 'an event' : `a ${type} event`)
