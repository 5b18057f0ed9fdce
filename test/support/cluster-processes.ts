import type { ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { unlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'

const PORT_RANGE = '/proc/sys/net/ipv4/ip_local_port_range'
const ephemeralLow = Number(/^\d+/.exec(existsSync(PORT_RANGE) ? readFileSync(PORT_RANGE, 'utf8') : '')?.[0] ?? 32768)

/**
 * A free port below the kernel's range for outgoing connections: a port from that range (as
 * freePort gives) can be taken meanwhile as the local port of some connection, nginx's or PgBouncer's.
 * Never 55432-55440, the dev cluster's.
 */
export async function listenPort (): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * (Math.max(ephemeralLow, 20001) - 20000))
    if (port >= 55432 && port <= 55440) continue
    const server = createServer()
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (!bound) continue
    await new Promise((resolve) => server.close(resolve))
    return port
  }
}

/** `promise`, or an error naming `what` after `ms`. */
export async function bounded<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`gave up after ${ms} ms waiting for ${what}`)), ms) })
  try { return await Promise.race([promise, late]) } finally { clearTimeout(timer) }
}

/**
 * Writes the child's pid to DIR/procs/NAME.pid, where scripts/cluster.sh stop (and its watchdog,
 * should the test die first) finds it; removed when the child exits.
 */
export async function track (dir: string, name: string, child: ChildProcess) {
  const file = `${dir}/procs/${name}.pid`
  await writeFile(file, String(child.pid))
  child.once('exit', () => { unlink(file).catch(() => {}) })
}
