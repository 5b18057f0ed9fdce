import { existsSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'

const PORT_RANGE = '/proc/sys/net/ipv4/ip_local_port_range'
const ephemeralLow = Number(/^\d+/.exec(existsSync(PORT_RANGE) ? readFileSync(PORT_RANGE, 'utf8') : '')?.[0] ?? 32768)
// A port handed out is not bound until its server starts: never hand it out twice.
const given = new Set<number>()

/**
 * A free port below the kernel's range for outgoing connections, for the cluster's servers: a port
 * from that range can be taken meanwhile as the local port of some connection, nginx's or
 * PgBouncer's. Never 55432-55440, the dev cluster's, nor one this process was given before.
 */
export async function listenPort (): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * (Math.max(ephemeralLow, 20001) - 20000))
    if ((port >= 55432 && port <= 55440) || given.has(port)) continue
    const server = createServer()
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (!bound) continue
    await new Promise((resolve) => server.close(resolve))
    given.add(port)
    return port
  }
}
