import { Type } from '@sinclair/typebox'

// No URL, user, host, port or database: the probe answers anyone. A state change is logged with the URL, password masked.
const ReplicaSchema = Type.Object({
  name: Type.String({ description: 'replica-1, replica-2... in the order of DATABASE_REPLICA_URLS' }),
  status: Type.Union([Type.Literal('ok'), Type.Literal('lagging'), Type.Literal('down')], {
    description: 'ok: it serves reads; lagging (behind past DATABASE_REPLICA_MAX_LAG_SECONDS) or down: reads go to the primary'
  }),
  lag_bytes: Type.Union([Type.Integer(), Type.Null()], { description: 'WAL bytes of the primary it has not replayed; null while down' }),
  lag_seconds: Type.Union([Type.Number(), Type.Null()], { description: 'how far behind it is in time: 0 when level; null while down' })
}, { title: 'Replica' })

export const HealthSchema = Type.Object({
  status: Type.Literal('ok'),
  replicas: Type.Optional(Type.Array(ReplicaSchema, { description: 'the readiness probe\'s view of each replica, when there are any' }))
}, { $id: 'Health', title: 'Health' })
