import type { ChildProcess } from 'node:child_process'
import { unlink, writeFile } from 'node:fs/promises'

export { listenPort } from '../../scripts/listen-port.js'

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
