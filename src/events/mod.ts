/**
 * Watch fan-out: `EventHub` and its subscriptions.
 *
 * @module
 */

export {
  DEFAULT_QUEUE_LIMIT,
  EventHub,
  type EventHubOptions,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionItem,
} from "./hub.ts";
