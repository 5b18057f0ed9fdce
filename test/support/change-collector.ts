import type { ChangeEvent } from '../../db/resource-events.js'

/** A change feed subscriber that keeps what it is given and can wait for its nth event, however long the notification takes. */
export function collector () {
  const events: ChangeEvent[] = []
  let waiting: { count: number, resolve: () => void } | undefined
  return {
    events,
    listener: (event: ChangeEvent) => {
      events.push(event)
      if (waiting && events.length >= waiting.count) waiting.resolve()
    },
    until: (count: number) => events.length >= count ? Promise.resolve() : new Promise<void>((resolve) => { waiting = { count, resolve } })
  }
}
