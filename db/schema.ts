import { sql } from 'drizzle-orm'
import {
  bigint, boolean, check, doublePrecision, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, uuid, varchar
} from 'drizzle-orm/pg-core'

// Column names are the API's field names, so a row is its public shape without a mapping layer.

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow()

export const users = pgTable('users', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  // Stored lower-cased by the accounts repository, so a plain unique index is case-insensitive.
  email: text('email').notNull().unique(),
  hashed_password: text('hashed_password').notNull(),
  is_active: boolean('is_active').notNull().default(true),
  is_superuser: boolean('is_superuser').notNull().default(false),
  scopes: text('scopes').notNull().default('me'),
  // Accounts that existed before verification did are migrated unverified: nobody proved their address.
  is_verified: boolean('is_verified').notNull().default(false),
  created_at: createdAt()
})

// Mailed single-use tokens, kept as SHA-256; `binding` fingerprints what one was issued for: once that changes, it is void.
export const accountTokens = pgTable('account_tokens', {
  hash: text('hash').primaryKey(),
  user_id: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  purpose: text('purpose', { enum: ['reset', 'verify', 'email_change'] }).notNull(),
  binding: text('binding').notNull(),
  expires_at: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  created_at: createdAt(),
  // The address an email change moves to: held here, not in users, so a pending change claims no address.
  new_email: text('new_email')
}, (table) => [
  index('account_tokens_user_id_idx').on(table.user_id),
  index('account_tokens_expires_at_idx').on(table.expires_at),
  check('account_tokens_purpose', sql`${table.purpose} in ('reset', 'verify', 'email_change')`),
  check('account_tokens_new_email', sql`(${table.purpose} = 'email_change') = (${table.new_email} is not null)`)
])

/** A login: one family of refresh tokens, and what its access tokens name as `sid`. */
export const sessions = pgTable('sessions', {
  id: uuid('id').primaryKey(),
  user_id: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  created_at: createdAt(),
  user_agent: text('user_agent'),
  ip: text('ip'),
  ended_at: timestamp('ended_at', { withTimezone: true, mode: 'date' }),
  // The primary's WAL position after the session's last write: a replica serves the session once it has replayed this far.
  write_lsn: bigint('write_lsn', { mode: 'bigint' })
}, (table) => [
  index('sessions_user_id_idx').on(table.user_id)
])

export const refreshTokens = pgTable('refresh_tokens', {
  jti: uuid('jti').primaryKey(),
  user_id: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  // Every token rotated from one login shares the family, its session, so reuse can revoke the whole chain.
  family_id: uuid('family_id').notNull().references(() => sessions.id, { onDelete: 'cascade' }),
  expires_at: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  revoked: boolean('revoked').notNull().default(false),
  created_at: createdAt()
}, (table) => [
  index('refresh_tokens_user_id_idx').on(table.user_id),
  index('refresh_tokens_family_id_idx').on(table.family_id),
  index('refresh_tokens_expires_at_idx').on(table.expires_at)
])

export const loginFailures = pgTable('login_failures', {
  email: text('email').notNull(),
  address: text('address').notNull(),
  window_start: timestamp('window_start', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  failures: integer('failures').notNull().default(0)
}, (table) => [
  primaryKey({ columns: [table.email, table.address] }),
  index('login_failures_window_start_idx').on(table.window_start)
])

// Fixed-window counters, UNLOGGED (in its migration): counts are not worth a WAL flush, and a crash only resets them.
export const rateLimits = pgTable('rate_limits', {
  key: text('key').primaryKey(),
  hits: integer('hits').notNull(),
  reset_at: timestamp('reset_at', { withTimezone: true, mode: 'date' }).notNull()
}, (table) => [
  index('rate_limits_reset_at_idx').on(table.reset_at)
])

/** The first answer to each Idempotency-Key per user or address; `status` is null while the request is in flight. */
export const idempotencyKeys = pgTable('idempotency_keys', {
  scope: text('scope').notNull(),
  key: text('key').notNull(),
  fingerprint: text('fingerprint').notNull(),
  status: integer('status'),
  headers: jsonb('headers').$type<Record<string, string>>(),
  body: text('body'),
  created_at: createdAt(),
  expires_at: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull()
}, (table) => [
  primaryKey({ columns: [table.scope, table.key] }),
  index('idempotency_keys_expires_at_idx').on(table.expires_at)
])

/** Every write to a resource with a change feed, in commit-independent id order; triggers write it, the feed reads it, a purge trims it. */
export const resourceEvents = pgTable('resource_events', {
  id: bigint('id', { mode: 'bigint' }).primaryKey().generatedAlwaysAsIdentity(),
  table_name: text('table_name').notNull(),
  op: text('op', { enum: ['created', 'updated', 'deleted'] }).notNull(),
  row_id: integer('row_id').notNull(),
  // No foreign key: deleting an account deletes its rows, whose delete events name it.
  owner_id: integer('owner_id'),
  row: text('row').notNull(),
  created_at: createdAt()
}, (table) => [
  index('resource_events_table_name_id_idx').on(table.table_name, table.id),
  // A resume reads one owner's events, whatever other owners logged.
  index('resource_events_table_name_owner_id_id_idx').on(table.table_name, table.owner_id, table.id),
  check('resource_events_op', sql`${table.op} in ('created', 'updated', 'deleted')`)
])

/** Per table, the highest event id a purge deleted: a resume from below it may have missed events. */
export const resourceEventHorizons = pgTable('resource_event_horizons', {
  table_name: text('table_name').primaryKey(),
  purged_through: bigint('purged_through', { mode: 'bigint' }).notNull()
})

/** Short-lived single-use tickets for a browser's EventSource, which cannot send a bearer token; kept as SHA-256. */
export const streamTickets = pgTable('stream_tickets', {
  hash: text('hash').primaryKey(),
  user_id: integer('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  // The access token's `sid`, so ending the session voids its tickets.
  session_id: uuid('session_id'),
  resource: text('resource').notNull(),
  scopes: text('scopes').notNull().default(''),
  expires_at: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  created_at: createdAt()
}, (table) => [
  index('stream_tickets_user_id_idx').on(table.user_id),
  index('stream_tickets_expires_at_idx').on(table.expires_at)
])

export const items = pgTable('items', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  name: varchar('name', { length: 128 }).notNull(),
  description: varchar('description', { length: 512 }),
  price: doublePrecision('price').notNull(),
  in_stock: boolean('in_stock').notNull().default(true),
  created_at: createdAt()
}, (table) => [
  index('items_name_idx').on(table.name),
  // Serves `?q=` (ILIKE '%text%'), which a btree cannot; pg_trgm is created by migration 0002.
  index('items_name_trgm_idx').using('gin', table.name.op('gin_trgm_ops')),
  check('items_price_non_negative', sql`${table.price} >= 0`)
])

// `total` sums these shards, kept by triggers (migration 0003) one shard per backend, so writers share no hot row.
export const itemCounts = pgTable('item_counts', {
  shard: smallint('shard').primaryKey(),
  n: bigint('n', { mode: 'number' }).notNull().default(0)
})

// The definition each schema resource's table was created with, so a restart can tell a safe change from a lossy one.
export const fieldTableDefinitions = pgTable('plinth_resource_tables', {
  table_name: text('table_name').primaryKey(),
  definition: jsonb('definition').notNull(),
  updated_at: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow()
})

/** The table of a `records` preset resource: its own identity sequence, so ids start at 1 and are never reused. */
export function resourceTable (name: string) {
  return pgTable(name, {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    title: text('title').notNull(),
    description: text('description')
  })
}

export type ResourceTable = ReturnType<typeof resourceTable>
