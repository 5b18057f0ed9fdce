import { Type, type Static } from '@sinclair/typebox'
import { Id, Timestamp, ref } from './common.js'
import { pageOf } from './page.js'

const SessionId = () => Type.String({ format: 'uuid', description: 'The session: its first refresh token\'s id', examples: ['0b6c1f0e-8a1d-4e51-9d5c-2f4f5a7e9c10'] })

export const SessionSchema = Type.Object({
  id: SessionId(),
  created_at: Timestamp({ description: 'The login that opened it (UTC)' }),
  last_used_at: Timestamp({ description: 'Its last refresh, or its login until then (UTC)' }),
  user_agent: Type.Union([Type.String(), Type.Null()], { description: 'The User-Agent of its login, at most 512 characters' }),
  ip: Type.Union([Type.String(), Type.Null()], { description: 'The client address of its login (TRUST_PROXY decides which)' }),
  current: Type.Boolean({ description: 'Whether the access token of this request belongs to it' })
}, { $id: 'Session', title: 'Session', description: 'A login still in use: a family of rotating refresh tokens and their access tokens' })

export type Session = Static<typeof SessionSchema>

export const SessionPageSchema = pageOf(ref(SessionSchema), { $id: 'SessionPage', description: 'A page of live sessions, newest first' })

export const MySessionParams = Type.Object({ session_id: SessionId() })
export const UserSessionParams = Type.Object({ user_id: Id(), session_id: SessionId() })
