import { performance } from 'node:perf_hooks'
import { startServer, stopServer, type Pinning } from './servers.js'

/**
 * PGlite start to healthy on an existing data folder: a first start creates and migrates the
 * (empty) `folder`, then a second start is timed from spawning the process to /health/ready
 * answering 200. The folder stays, created and migrated, for the caller.
 */
export async function pgliteStartup (pinning: Pinning, folder: string) {
  const env = { BENCH_DATABASE_URL: `pglite://${folder}` }
  const first = await startServer('pglite-first', 'app-server', pinning, env)
  await stopServer(first)
  const started = performance.now()
  const again = await startServer('pglite-again', 'app-server', pinning, env)
  const res = await fetch(`${again.url}/api/v1/health/ready`)
  const healthyMs = performance.now() - started
  const rss = await again.rss()
  await stopServer(again)
  if (!res.ok) throw new Error(`readiness after restart: ${res.status}`)
  return { firstMs: first.startMs, healthyMs, rss }
}
