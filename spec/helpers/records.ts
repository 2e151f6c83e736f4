export { syntheticRecord } from "../../bench/records.ts";
