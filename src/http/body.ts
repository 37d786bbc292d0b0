// Reads a JSON object body; anything else is INVALID_REQUEST, never an exception.

import type { Context } from 'hono';

export async function jsonObject(c: Context): Promise<Record<string, unknown> | null> {
  const text = await c.req.text();
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
