import { loadSettings, SettingsError } from "../../config/settings.js";
import type { Settings } from "../../config/settings.js";
import { refuseToStart } from "./log.js";

/** The settings from the environment; a bad one refuses to start (status 2). */
export function settingsOrExit(): Settings {
  try {
    return loadSettings();
  } catch (err) {
    if (err instanceof SettingsError) refuseToStart(err.message);
    throw err;
  }
}
