import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import type { Test } from 'tap'
import { clusterClient } from './cluster-http.js'
import { track } from './cluster-processes.js'
import { until, untilAnswered } from './until.js'

const root = new URL('../../', import.meta.url).pathname
const nginxTemplate = `${root}scripts/cluster/nginx.conf`
export const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find(existsSync)

/** What nginx needs of an instance. */
export interface Upstream {
  name: string
  address: string
  base: string
}

/** nginx from scripts/cluster/nginx.conf, its files in DIR/nginx; `reload` takes a new list of instances. */
export async function startNginx (t: Test, clusterDir: string, port: number, upstreams: Upstream[]) {
  const dir = `${clusterDir}/nginx`
  await mkdir(dir, { recursive: true })
  const conf = `${dir}/nginx.conf`
  const template = await readFile(nginxTemplate, 'utf8')
  const write = (list: Upstream[]) => writeFile(conf, template
    .replaceAll('{{DIR}}', dir)
    .replaceAll('{{PORT}}', String(port))
    .replace('{{SERVERS}}', list.map((one) => `    server ${one.address} max_fails=1 fail_timeout=2s;`).join('\n')))
  await write(upstreams)
  const child = spawn(NGINX!, ['-p', dir, '-c', conf, '-e', `${dir}/error.log`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const exited = once(child, 'exit')
  await track(clusterDir, 'nginx', child)
  // SIGTERM: the master stops its workers first; a SIGKILLed master would leave them serving.
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const late = setTimeout(() => child.kill('SIGKILL'), 5_000)
    try { await exited } finally { clearTimeout(late) }
  })
  const base = `http://127.0.0.1:${port}`
  await until(`nginx listening on ${port}`, () => {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}: ${stderr}`)
    return existsSync(`${dir}/nginx.pid`) || undefined
  }, 20_000)
  const errorLog = () => readFileSync(`${dir}/error.log`, 'utf8')
  return {
    base,
    port,
    dir,
    errorLog,
    /** The error log's [error] and [warn] lines. */
    problems: () => errorLog().split('\n').filter((line) => /\[(error|warn)\]/.test(line)),
    /** The access log, one object per line: status, request_id, upstream (an address, or several when nginx retried). */
    accessLog: () => readFileSync(`${dir}/access.log`, 'utf8').trim().split('\n').filter(Boolean).map((line) => ({
      line,
      status: Number(/" (\d{3}) request_id=/.exec(line)?.[1]),
      request: /"([^"]*)"/.exec(line)?.[1] ?? '',
      requestId: /request_id=(\S+)/.exec(line)?.[1] ?? '',
      upstream: /upstream=(.*) upstream_status=/.exec(line)?.[1] ?? ''
    })),
    /** Reloads with `list` as the upstream; resolves once the old worker, which may still hold connections, is gone. */
    async reload (list: Upstream[]) {
      const exits = () => (errorLog().match(/worker process \d+ exited/g) ?? []).length
      const before = exits()
      await write(list)
      child.kill('SIGHUP')
      await until('the old nginx worker to exit', () => exits() > before || undefined, 20_000)
    }
  }
}

export type Nginx = Awaited<ReturnType<typeof startNginx>>

/** Waits until the instance is ready by its own probe, then until nginx sends it a request again. */
export async function untilServing (nginx: Nginx, one: Upstream, ms = 60_000) {
  const direct = clusterClient(one.base)
  const through = clusterClient(nginx.base)
  try {
    await untilAnswered(`${one.name} ready`, async () => (await direct.send('/api/v1/health/ready').catch(() => ({ status: 0 }))).status === 200 || undefined, ms)
    await untilAnswered(`nginx sending to ${one.name}`, async () => (await through.send('/api/v1/health/ready')).headers.get('x-upstream') === one.address || undefined, ms)
  } finally {
    direct.close()
    through.close()
  }
}
