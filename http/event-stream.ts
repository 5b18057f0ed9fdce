import { PassThrough } from 'node:stream'
import type { FastifyReply } from 'fastify'

/** One Server-Sent Event: `event`, `id` and `data` lines as the EventSource spec reads them. */
export interface ServerSentEvent {
  event?: string
  id?: string
  data?: string
}

export interface EventStreamOptions {
  /** The `retry:` hint: how long a client waits before reconnecting. */
  retryMs: number
  /** Bytes not yet taken by the client past which the stream is cut: a stalled client holds this, plus one event, at most. */
  maxBufferedBytes: number
}

const LINE_BREAK = /\r\n|\r|\n/

/** An event's text: a data line per line of data, since a line break inside one would end the field. */
export function frame ({ event, id, data }: ServerSentEvent): string {
  let text = ''
  if (event !== undefined) text += `event: ${event}\n`
  if (id !== undefined) text += `id: ${id}\n`
  if (data !== undefined) text += LINE_BREAK.test(data) ? data.split(LINE_BREAK).map((line) => `data: ${line}\n`).join('') : `data: ${data}\n`
  return `${text}\n`
}

/**
 * A text/event-stream answer sent through Fastify (its headers and hooks apply), written to as events
 * come. Nothing is ever queued without bound: past `maxBufferedBytes` not yet read by the client, the
 * connection is cut, and the client resumes with Last-Event-ID.
 */
export class EventStream {
  #out = new PassThrough()
  #reply: FastifyReply
  #limit: number
  #closed = false
  #onClose: Array<(why: 'ended' | 'client' | 'slow') => void> = []

  constructor (reply: FastifyReply, { retryMs, maxBufferedBytes }: EventStreamOptions) {
    this.#reply = reply
    this.#limit = maxBufferedBytes
    reply.raw.once('close', () => this.#close('client'))
    reply.code(200).headers({
      'content-type': 'text/event-stream; charset=utf-8',
      // A proxy must neither cache nor hold back the events (nginx buffers unless told).
      'cache-control': 'no-store',
      'x-accel-buffering': 'no'
    }).send(this.#out)
    // The first bytes send the headers, so the client's EventSource opens now.
    this.#write(`retry: ${retryMs}\n\n`)
  }

  get closed () { return this.#closed }

  /** Calls `listener` once, when the stream ends for any reason. */
  onClose (listener: (why: 'ended' | 'client' | 'slow') => void) {
    if (this.#closed) listener('ended')
    else this.#onClose.push(listener)
  }

  /** Bytes waiting for the client: in the stream, the response and its socket. */
  get buffered (): number {
    return this.#out.readableLength + this.#out.writableLength + this.#reply.raw.writableLength
  }

  /** An event, or its text from frame() when many streams send the same one. */
  send (event: ServerSentEvent | string): boolean {
    return this.#write(typeof event === 'string' ? event : frame(event))
  }

  /** A comment line, which clients ignore and proxies see as traffic. */
  comment (text: string): boolean {
    return this.#write(`: ${text}\n\n`)
  }

  /** Ends the stream after what was written; the client reconnects after `retry`. */
  end () {
    if (this.#closed) return
    this.#out.end()
    this.#close('ended')
  }

  /** Whether the client is behind: a writer that can wait (a backlog) awaits drained() before writing more. */
  get congested (): boolean {
    return this.#out.writableNeedDrain || this.#reply.raw.writableNeedDrain
  }

  /** Resolves once the stream and the response have passed on what they held, or the stream closed. */
  async drained (): Promise<void> {
    const raw = this.#reply.raw
    while (!this.#closed && this.congested) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.#out.off('drain', done)
          raw.off('drain', done)
          raw.off('close', done)
          resolve()
        }
        this.#out.once('drain', done)
        raw.once('drain', done)
        raw.once('close', done)
      })
    }
  }

  /** Cuts the connection at once: ending politely would queue behind what the client does not read. */
  cut () {
    if (this.#closed) return
    this.#close('slow')
    this.#reply.raw.destroy()
  }

  #write (text: string): boolean {
    if (this.#closed) return false
    // Checked before writing: an event larger than the bound still goes to a client that keeps up.
    if (this.buffered > this.#limit) {
      this.cut()
      return false
    }
    this.#out.write(text)
    return true
  }

  #close (why: 'ended' | 'client' | 'slow') {
    if (this.#closed) return
    this.#closed = true
    for (const listener of this.#onClose.splice(0)) listener(why)
  }
}

/** One timer for many streams, running only while some are open: `add` returns the function that removes. */
export function ticker (intervalMs: number) {
  const tasks = new Set<() => void>()
  let timer: NodeJS.Timeout | undefined
  return {
    add (task: () => void): () => void {
      tasks.add(task)
      // Open streams must not keep a process from exiting: closing the app ends them.
      timer ??= setInterval(() => { for (const each of tasks) each() }, intervalMs).unref()
      return () => {
        tasks.delete(task)
        if (tasks.size === 0 && timer !== undefined) {
          clearInterval(timer)
          timer = undefined
        }
      }
    }
  }
}
