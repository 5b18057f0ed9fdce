import { longLived } from '../../plugins/overload.js'
import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { isEventId, type ChangeEvent, type ChangeFeed, type EventScope } from '../../db/resource-events.js'
import { EventStream, frame, ticker } from '../../http/event-stream.js'
import type { App, Guard } from '../../http/types.js'
import { notAuthenticated } from '../../plugins/auth/errors.js'
import { guardCheck } from '../../plugins/auth/index.js'
import { guarded, problemResponses } from '../../schemas/error.js'
import { pascalName } from '../../schemas/fields.js'
import type { NoticeMark, StreamSlot } from '../../http/open-streams.js'
import { InvalidResourceOptions, TooManyStreams, invalidInput } from './errors.js'
import { rowMatcher } from './event-filters.js'
import { TicketParameter, eventTickets } from './event-tickets.js'
import { checkListQuery, filterParameters, filtersOf, type Column } from './list-query.js'
import type { ResolvedResourceOptions } from './options.js'

/** How long a client waits before reconnecting after the stream ends. */
const RETRY_MS = 3000
/** Events read from the durable log at a time while a resumed stream catches up. */
const BACKLOG_PAGE = 500
const EVENT_ID = /^(0|[1-9]\d{0,18})$/

interface Stream { end (): void }

// Every stream of a table gets the same event object: its text and its parsed row are made once for them all.
const framed = new WeakMap<ChangeEvent, string>()
const parsed = new WeakMap<ChangeEvent, Record<string, unknown>>()

function textOf (event: ChangeEvent): string {
  let text = framed.get(event)
  if (text === undefined) framed.set(event, text = frame({ event: event.op, id: event.id, data: event.row }))
  return text
}

function rowOf (event: ChangeEvent): Record<string, unknown> {
  let row = parsed.get(event)
  if (row === undefined) parsed.set(event, row = JSON.parse(event.row) as Record<string, unknown>)
  return row
}

/** What the resource's other routes already built, which the stream shares. */
export interface EventRouteParts {
  columns: Column[]
  /** The list's query schema, whose filter parameters the stream takes. */
  listQuery: TObject
  /** The resource's read guard, owner mode's authentication included. */
  read?: Guard
}

/** The `id` of a resumed stream: Last-Event-ID, which EventSource sends on reconnect, or `lastEventId` for a new EventSource. */
function resumePoint (request: FastifyRequest, query: string | undefined): bigint | undefined {
  const header = request.headers['last-event-id'] as string | undefined
  const fromHeader = header !== undefined && header !== ''
  const text = fromHeader ? header : query
  if (text === undefined || text === '') return undefined
  if (!isEventId(text)) {
    throw fromHeader
      ? invalidInput('headers', '/last-event-id', 'must be the id of an event: digits, as the stream sent it')
      : invalidInput('querystring', '/lastEventId', 'must be the id of an event: digits, as the stream sent it')
  }
  return BigInt(text)
}

function streamSchema (name: string, { listQuery, read }: EventRouteParts, filters: string[], tickets: boolean) {
  const stem = pascalName(name)
  const query: Record<string, TSchema> = Object.fromEntries(filters.map((key) => [key, listQuery.properties[key]!]))
  if (tickets) query.ticket = TicketParameter(name)
  query.lastEventId = Type.Optional(Type.String({ pattern: EVENT_ID.source, description: 'Resume after this event, for a new EventSource (one that reconnects sends Last-Event-ID itself)' }))
  return guarded({
    operationId: `stream${stem}Events`,
    tags: [name],
    summary: `Follow the changes of ${name} as Server-Sent Events`,
    description: 'A `text/event-stream` of `created`, `updated` and `deleted` events, each with `id:` (resume with `Last-Event-ID`) and ' +
      '`data:` (the row as the list shows it), of the rows the filters match now: an update that takes a row out of the filters sends nothing. ' +
      '`event: reset` says the resume point is past the kept log (list again). `: ping` comments keep proxies open. The stream ends when the ' +
      'access token expires, when the read guard no longer lets it through (checked at each ping: a session ended, an account deactivated), ' +
      'and when the client reads too slowly; reconnect with Last-Event-ID.' +
      (tickets ? ' A filter on a field named `ticket` is written `ticket[in]=` here.' : ''),
    querystring: Type.Object(query, { additionalProperties: false }),
    headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ description: 'The id of the last event received: the stream resumes after it' })) }),
    response: {
      200: { description: 'The event stream', content: { 'text/event-stream': { schema: Type.String({ description: 'event: created\\nid: 42\\ndata: {"id":7,...}' }) } } },
      ...problemResponses(422, [...TooManyStreams.example(20, 'account'), 'The account, or the client address, has as many streams open on this server as it may'], 503)
    }
  }, read)
}

/** GET /events, the change feed as Server-Sent Events, and POST /events/tickets for EventSource. */
export async function eventRoutes (app: App, opts: ResolvedResourceOptions, parts: EventRouteParts) {
  const { name, table, owner, eventHeartbeatSeconds, eventBufferBytes } = opts
  const { columns, read } = parts
  const parameters = filterParameters(columns)
  const kinds = Object.fromEntries(columns.map((column) => [column.name, column.kind]))
  const tickets = eventTickets(app, name, read)
  const schema = streamSchema(name, parts, [...parameters.keys()], tickets !== undefined)
  const checkFilters = checkListQuery(columns)
  const heartbeat = ticker(eventHeartbeatSeconds * 1000)
  // A stream outlives the check that opened it: plinth's guards run again at each heartbeat (a host's own, only at the start).
  const recheck = read === undefined ? undefined : guardCheck(read)
  const open = new Set<Stream>()
  const feed = (): ChangeFeed => app.plinthChanges

  app.addHook('onReady', async function needsChangeFeed () {
    if (!app.hasDecorator('plinthChanges') || !app.hasDecorator('plinthStreams')) throw new InvalidResourceOptions(`"${name}": the events route needs the change feed (plugins/changes.ts); or set routes: { events: false }`)
  })
  // Open streams would hold the server's close until their tokens expire.
  app.addHook('preClose', async function endStreams () {
    for (const stream of open) stream.end()
  })

  /** preValidation: the list's own check of its filters; its other parameters (paging, sort) are refused by name. */
  async function checkQuery (request: FastifyRequest) {
    const { lastEventId, ...filters } = request.query as Record<string, unknown>
    const own: Record<string, unknown> = lastEventId === undefined ? {} : { lastEventId }
    if (tickets !== undefined && filters.ticket !== undefined) {
      own.ticket = filters.ticket
      delete filters.ticket
    }
    const other = Object.keys(filters).find((key) => !parameters.has(key) && key in parts.listQuery.properties)
    if (other !== undefined) throw invalidInput('querystring', `/${other}`, 'is a parameter of the list, not of the event stream')
    // Unknown parameters are named as the list names them; `in` lists are split at commas.
    await checkFilters({ query: filters } as unknown as FastifyRequest)
    request.query = { ...filters, ...own }
  }

  function ownerOf (request: FastifyRequest): number | undefined {
    if (!owner) return undefined
    if (request.account === null) throw notAuthenticated()
    return request.account.is_superuser ? undefined : request.account.id
  }

  /** Where the account notices stood before the guard ran: a notice that came after it was read is one the guard may have missed. */
  const marks = new WeakMap<FastifyRequest, NoticeMark>()
  async function markNotices (request: FastifyRequest) {
    marks.set(request, app.plinthStreams.mark())
  }

  const onRequest = [markNotices, ...(tickets ? [tickets.redeem] : []), ...(read ? [read] : [])]
  app.get('/events', { schema, config: longLived, onRequest, preValidation: checkQuery }, async function streamEvents (request, reply) {
    const { ticket, lastEventId, ...query } = request.query as Record<string, unknown>
    const after = resumePoint(request, lastEventId as string | undefined)
    const filters = filtersOf(query, parameters)
    const matches = filters.length === 0 ? undefined : rowMatcher(filters, kinds)
    const me = ownerOf(request)
    const visible = (event: ChangeEvent) => (me === undefined || event.ownerId === me) && (matches === undefined || matches(rowOf(event)))
    const exp = tickets?.expiryOf(request) ?? request.tokenClaims?.exp
    const scope: EventScope = { ownerId: me, filters, kinds }
    const slot = app.plinthStreams.claim(request)
    if ('cap' in slot) throw new TooManyStreams(slot.max, slot.cap === 'account' ? 'account' : 'client address')
    // However the answer ends, even before the stream opens, its place is given back.
    reply.raw.once('close', slot.release)
    if (request.raw.socket?.destroyed === true) slot.release()
    try {
      if (request.account?.id !== undefined) await app.plinthStreams.ready()
      return await followChanges(request, reply, { after, visible, scope, me, slot, expiresAt: exp === undefined ? undefined : exp * 1000 })
    } catch (err) {
      slot.release()
      throw err
    }
  })

  /** `visible` decides on live events; `scope` is the same rule in the SQL of a resume. */
  interface Follow { after?: bigint, visible: (event: ChangeEvent) => boolean, scope: EventScope, me: number | undefined, slot: StreamSlot, expiresAt?: number }

  /** Subscribe first, then read the log up to the present, then the events that came meanwhile, then live: nothing twice, nothing missed. */
  async function followChanges (request: FastifyRequest, reply: FastifyReply, { after, visible, scope, me, slot, expiresAt }: Follow) {
    const changes = feed()
    // Listening first: from then on, position() is where live events start.
    await changes.ready()
    const waiting: ChangeEvent[] = []
    let waitingBytes = 0
    let live = false
    const opened: { stream?: EventStream } = {}
    const unsubscribe = changes.subscribe(table, (event) => {
      if (live) return consider(event)
      waiting.push(event)
      waitingBytes += event.row.length
      // Live events cannot wait for a client that is still catching up, nor pile up: it resumes later instead.
      if (waitingBytes > eventBufferBytes) opened.stream?.cut()
    })
    // Read in the same turn as the subscription: every event the listener gets is past it.
    const position = changes.position()
    // Only the subscriber's own events in scope are read, a page at a time: other owners' events cost a resume nothing.
    const since = (from: bigint) => changes.since(table, String(from), BACKLOG_PAGE, position, scope)
    let backlog: Awaited<ReturnType<ChangeFeed['since']>> | undefined
    try {
      backlog = after === undefined ? undefined : await since(after)
    } catch (err) {
      unsubscribe()
      throw err
    }

    const stream = opened.stream = new EventStream(reply, { retryMs: RETRY_MS, maxBufferedBytes: eventBufferBytes })
    // `seen`: the last event considered; `told`: the last id the client has, which a filtered-out event does not move.
    let seen = after ?? BigInt(position)
    let told = after
    const markSeen = () => {
      if (seen !== told && stream.send({ id: String(seen) })) told = seen
    }
    const consider = (event: ChangeEvent, inScope = visible(event)) => {
      const id = BigInt(event.id)
      if (id <= seen) return
      seen = id
      if (inScope && stream.send(textOf(event))) told = id
    }
    const reset = () => {
      stream.send({ event: 'reset', id: position, data: '{}' })
      seen = told = BigInt(position)
    }
    const expired = () => expiresAt !== undefined && app.plinthClock().getTime() > expiresAt
    const entry: Stream = { end: () => stream.end() }
    open.add(entry)
    let checking = false
    let again = false
    // A superuser made ordinary would go on hearing every owner's rows: the client reconnects and is told anew.
    const allowed = async () => { await recheck!(request); return ownerOf(request) === me }
    /** The read guard, again: at each heartbeat, and at once when the account's sessions or rights change. */
    const check = () => {
      if (recheck === undefined || stream.closed) return
      // A notice during a check may concern what that check already read: it runs once more after.
      if (checking) {
        again = true
        return
      }
      checking = true
      allowed().then((still) => {
        checking = false
        if (!still) return stream.end()
        if (again) {
          again = false
          check()
        }
      }, (err: unknown) => {
        request.log.info({ err }, 'events: the read guard refuses the stream now; it ends')
        stream.end()
      })
    }
    slot.attach({ end: entry.end, check })
    if (app.plinthStreams.missed(marks.get(request)!)) check()
    const stopBeats = heartbeat.add(() => {
      if (expired()) return stream.end()
      markSeen()
      stream.comment('ping')
      check()
    })
    const expiry = expiresAt === undefined ? undefined : setTimeout(() => { if (expired()) stream.end() }, Math.max(0, expiresAt - app.plinthClock().getTime()) + 1).unref()
    stream.onClose(() => {
      unsubscribe()
      stopBeats()
      clearTimeout(expiry)
      open.delete(entry)
      slot.release()
    })

    try {
      while (backlog !== undefined && !stream.closed) {
        if (backlog.reset) {
          reset()
          break
        }
        for (const event of backlog.events) {
          // The log's own query chose it.
          consider(event, true)
          // The log can wait for the client: it is read at the client's pace.
          if (stream.congested) await stream.drained()
        }
        // The page's events out of scope were passed over too: the next page starts after them.
        if (BigInt(backlog.readThrough) > seen) seen = BigInt(backlog.readThrough)
        if (!backlog.full) {
          // Every event in scope up to the position was read: the client's resume point moves there.
          if (BigInt(position) > seen) seen = BigInt(position)
          break
        }
        backlog = await since(seen)
      }
    } catch (err) {
      request.log.error({ err }, 'events: reading the change log failed; the stream ends and the client resumes')
      stream.end()
    }
    if (waitingBytes > eventBufferBytes) stream.cut()
    for (const event of waiting.splice(0)) consider(event)
    live = true
    markSeen()
    if (expired()) stream.end()
    return reply
  }
}
