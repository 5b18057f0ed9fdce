import { readFile } from 'node:fs/promises'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import type { Database } from '../../db/client.js'
import { refreshTokens } from '../../db/schema.js'

export interface Sample<T> {
  /** Seconds since the sampler started. */
  at: number
  value: T
}

/** The resident set size of a process in MB, as the kernel counts it (VmRSS). */
export async function rssMb (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]
  if (kb === undefined) throw new Error(`no VmRSS for process ${pid}`)
  return Number(kb) / 1024
}

/** The CPU time a process has used so far, user and system, in seconds. */
export async function cpuSeconds (pid: number): Promise<number> {
  // The command name (field 2) is in parentheses and may hold spaces; utime and stime follow it
  // as fields 14 and 15, in clock ticks of 1/100 s on Linux.
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/^.*\) /s, '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** Reads a value every `everyMs` until stopped, keeping each with its time. */
export function sampler<T> (everyMs: number, read: () => Promise<T>) {
  const samples: Array<Sample<T>> = []
  const start = performance.now()
  const stopped = new AbortController()
  const done = (async () => {
    while (!stopped.signal.aborted) {
      samples.push({ at: (performance.now() - start) / 1000, value: await read() })
      await sleep(everyMs, undefined, { signal: stopped.signal }).catch(() => {})
    }
  })()
  return {
    samples,
    /** Takes one last sample, so the series ends at the moment of the call. */
    async stop () {
      stopped.abort()
      await done
      samples.push({ at: (performance.now() - start) / 1000, value: await read() })
      return samples
    }
  }
}

/** The median of the values sampled from `from` to `to` seconds. */
function valuesBetween (samples: Array<Sample<number>>, from: number, to: number): number[] {
  const values = samples.filter(({ at }) => at >= from && at <= to).map(({ value }) => value).sort((a, b) => a - b)
  if (values.length === 0) throw new Error(`no sample from ${from} to ${to} s`)
  return values
}

export function medianBetween (samples: Array<Sample<number>>, from: number, to: number): number {
  const values = valuesBetween(samples, from, to)
  return values[Math.floor(values.length / 2)] as number
}

export function maxBetween (samples: Array<Sample<number>>, from: number, to: number): number {
  return valuesBetween(samples, from, to).at(-1) as number
}

export interface RefreshRows {
  total: number
  /** Neither revoked nor expired: sessions a client can still refresh. */
  live: number
}

export async function refreshRows (db: Database): Promise<RefreshRows> {
  const [row] = await db.select({
    total: sql<number>`count(*)::int`,
    live: sql<number>`(count(*) filter (where not ${refreshTokens.revoked} and ${refreshTokens.expires_at} > now()))::int`
  }).from(refreshTokens)
  if (!row) throw new Error('count(*) returned no row')
  return row
}
