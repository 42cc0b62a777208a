/** Where `podhook listen` is in a remote's export. */
export interface ListenPosition {
  /** The remote's `x-podhook-next-cursor` after the last delivery seen; null before the first. */
  cursor: string | null;
  /** Where the first listen started (epoch ms), used while no delivery was seen. */
  since: number;
}

/** Where `podhook listen` keeps its place per remote: part of the one store interface. */
export interface ListenCursorStore {
  /** The position saved for this remote, or null when it was never followed from here. */
  readListenPosition(remote: string): Promise<ListenPosition | null>;
  /** Saves (or replaces) the remote's position. */
  writeListenPosition(remote: string, position: ListenPosition, now: number): Promise<void>;
}
