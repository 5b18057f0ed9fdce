import { Type } from '@sinclair/typebox'

export const HealthSchema = Type.Object({
  status: Type.Literal('ok')
}, { $id: 'Health', title: 'Health' })
