import type { FastifyRequest } from 'fastify'
import type { Database } from '../db/client.js'
import { isDatabaseUnavailable } from '../db/errors.js'
import type { ReadFloor } from '../db/replicas.js'
import type { App } from './types.js'

/** Runs a read with the repository of the database the request may read: a replica that has its writes, else the primary. */
export type ReadOn<R> = <T>(request: FastifyRequest, read: (repository: R) => Promise<T>) => Promise<T>

/**
 * What a request must see: its session's last write when a guard read the session, else everything committed before
 * it began, as no write of an anonymous client can be told from another's.
 */
function floorOf (request: FastifyRequest): ReadFloor {
  if (request.sessionWriteLsn === undefined) return 'now'
  return request.sessionWriteLsn ?? undefined
}

/** `create`'s repository on the primary (`primary`, when the caller has it) and on each replica; with no replicas, every read runs on the primary's. */
export function readsOn<R> (app: App, create: (db: Database) => R, primary: R = create(app.plinthDb.db)): ReadOn<R> {
  const replicas = app.hasDecorator('plinthReplicas') ? app.plinthReplicas : null
  if (replicas === null) return (_request, read) => read(primary)
  const repositories = new Map<Database, R>()
  const on = (db: Database) => {
    let repository = repositories.get(db)
    if (repository === undefined) repositories.set(db, repository = create(db))
    return repository
  }
  return async (request, read) => {
    const db = await replicas.pick(floorOf(request))
    if (db === null) return read(primary)
    try {
      return await read(on(db))
    } catch (err) {
      // A read can run again: a replica gone mid-read costs its reader nothing but the primary's time.
      if (!isDatabaseUnavailable(err)) throw err
      replicas.failed(db)
      request.log.warn({ err }, 'a replica failed a read: read again on the primary')
      return read(primary)
    }
  }
}
