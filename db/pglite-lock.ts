import { linkSync, readFileSync, realpathSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PgliteInUseError } from './errors.js'

/** In a PGlite folder, the PID of the process that has it open. */
export const LOCK_FILE = 'plinth.lock'

// The locks this process holds: a lock naming this PID but absent here was left by an earlier process with the same PID.
const held = new Set<string>()

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The PID the lock names; undefined when the lock is gone; 0 when it names none. */
function ownerOf (lock: string): number | undefined {
  try {
    const text = readFileSync(lock, 'utf8').trim()
    return /^\d+$/.test(text) ? Number(text) : 0
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

/** Creates `lock` naming this process, written aside and linked into place, so no reader sees it half-written; false if it exists. */
function create (lock: string): boolean {
  const mine = `${lock}.${process.pid}`
  writeFileSync(mine, `${process.pid}\n`)
  try {
    linkSync(mine, lock)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  } finally {
    unlinkSync(mine)
  }
}

/** Whether the process `owner` that `lock` names is gone, or is this one without holding it: a lock nobody holds. */
function isStale (lock: string, owner: number): boolean {
  return owner === 0 || !isRunning(owner) || (owner === process.pid && !held.has(lock))
}

/** Takes the folder for this process (a lock left by a dead process is taken over), or throws PgliteInUseError; returns the release. */
export function lockFolder (dataDir: string): () => void {
  // The real path: two spellings of one folder are one lock.
  const lock = join(realpathSync(dataDir), LOCK_FILE)
  for (let round = 1; !create(lock); round++) {
    const owner = ownerOf(lock)
    if (owner !== undefined && !isStale(lock, owner)) throw new PgliteInUseError(dataDir, owner)
    // Bounded: a lock that keeps coming back is taken by other processes between two looks.
    if (round === 3) throw new PgliteInUseError(dataDir, owner ?? 'unknown')
    if (owner !== undefined) rmSync(lock, { force: true })
  }
  held.add(lock)
  const release = () => {
    process.off('exit', release)
    if (held.delete(lock)) rmSync(lock, { force: true })
  }
  process.on('exit', release)
  return release
}
