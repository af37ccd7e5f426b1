// einc's help texts: the commands with their synopses and descriptions, and
// each command's usage printed from the one table of option help texts.
#pragma once

#include <string>
#include <vector>

namespace ein {

/// One subcommand's help: its synopsis (after `einc `), what it does, and
/// the options it takes (keys into kOptionHelp).
struct CommandHelp {
  const char *name;
  std::string synopsis;
  const char *description;
  std::vector<const char *> options;
};

/// Every command of einc, in the order `einc --help` lists them.
const std::vector<CommandHelp> &commands();
/// The command named `name`, or null.
const CommandHelp *findCommand(const std::string &name);
/// `einc --help`: every command and the common options.
std::string globalUsage();
/// `einc COMMAND --help`: its synopsis, description and options.
std::string commandUsage(const CommandHelp &command);
/// `einc --version`.
std::string versionText();

} // namespace ein
