import type { AddressInfo } from 'node:net'

/** Messages between bench/run.js and a server child over the IPC channel. */
export type ChildMessage = { type: 'ready', port: number } | { type: 'rss', rss: number }
export type ParentMessage = { type: 'rss' }

interface Listening {
  listen (options: { host: string, port: number }): Promise<string>
  server: { address (): AddressInfo | string | null }
  close (): Promise<unknown>
}

const CLOSE_TIMEOUT_MS = 3000

/**
 * Runs a server child: listens on 127.0.0.1 on a free port, reports it to the parent,
 * answers RSS queries, and closes when told to or when the parent goes away.
 */
export async function serve (build: () => Promise<Listening>) {
  const send = process.send?.bind(process)
  if (!send) throw new Error('start this through bench/run.js: it needs an IPC channel')
  const app = await build()
  await app.listen({ host: '127.0.0.1', port: 0 })

  let closing = false
  const close = () => {
    if (closing) return
    closing = true
    setTimeout(() => process.exit(1), CLOSE_TIMEOUT_MS).unref()
    app.close().then(() => process.exit(0), () => process.exit(1))
  }
  // Ctrl-C reaches the whole process group; the parent decides, but a closing app is fine too.
  process.on('SIGINT', close)
  process.on('SIGTERM', close)
  // The channel closes when the parent dies, however it dies: never outlive it.
  process.on('disconnect', close)
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'rss') send({ type: 'rss', rss: process.memoryUsage().rss } satisfies ChildMessage)
  })

  const { port } = app.server.address() as AddressInfo
  send({ type: 'ready', port } satisfies ChildMessage)
}

/** Entry-point wrapper: a child that cannot start says why on stderr and exits non-zero. */
export function main (build: () => Promise<Listening>) {
  serve(build).catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
}
