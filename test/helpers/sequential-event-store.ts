import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * A deterministic event store for tests: events replay in the order they were stored. (The SDK's example
 * in-memory store orders events by an id made of the clock and a random suffix, so two events stored in the
 * same millisecond can replay in either order, which made resumption tests flaky.)
 */
export class SequentialEventStore implements EventStore {
  private readonly events: { id: string; streamId: string; message: JSONRPCMessage }[] = [];
  private next = 0;

  /** The messages stored so far, in order (what a `Last-Event-ID` replay would send). */
  stored(): JSONRPCMessage[] {
    return this.events.map((e) => e.message);
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}_${String(this.next++).padStart(8, '0')}`;
    this.events.push({ id, streamId, message });
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((e) => e.id === eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastEventId);
    if (at === -1) return '';
    const { streamId } = this.events[at]!;
    for (const event of this.events.slice(at + 1)) if (event.streamId === streamId) await send(event.id, event.message);
    return streamId;
  }
}
