// Reading .ein files: the file compiled (`readSource`) and, for `from NAME
// import f, g`, NAME.ein beside the importing file (`a.b` is a/b.ein,
// `ein.optim` is optim.ein of ein's library directory), parsed and gathered
// into the importing module.
#include "ein/Syntax/Imports.h"
#include "ein/Support/Files.h"
#include "ein/Support/Library.h"
#include "ein/Syntax/Parser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace ein {

namespace {

namespace fs = std::filesystem;

class ImportResolver {
public:
  ImportResolver(Module &root, DiagnosticEngine &diags)
      : root(root), diags(diags) {}

  /// Resolves the imports of `module`, read from `path`; false after an
  /// error.
  bool resolve(Module &module, const std::string &path) {
    stack.push_back({canonical(path), path});
    for (auto &import : module.imports)
      if (!resolveOne(import, path))
        return false;
    stack.pop_back();
    return true;
  }

private:
  Module &root;
  DiagnosticEngine &diags;
  /// The files being resolved, outermost first: (canonical path, as named).
  std::vector<std::pair<std::string, std::string>> stack;
  /// Canonical path -> id of the files already read.
  std::map<std::string, unsigned> done;
  /// Per file id: the functions it defines or imports (what can be
  /// imported from it).
  std::map<unsigned, std::set<std::string>> exported;
  unsigned nextId = 1;

  static std::string canonical(const std::string &path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::path(path), ec);
    return ec ? path : p.string();
  }

  /// Whether `module` names a file of ein's library (`ein.optim`).
  static bool isLibraryModule(const std::string &module) {
    return module.rfind("ein.", 0) == 0;
  }

  /// `a.b.c` -> `a/b/c.ein`.
  static fs::path moduleFile(const std::string &module) {
    std::string relative = module;
    std::replace(relative.begin(), relative.end(), '.', '/');
    return fs::path(relative + ".ein");
  }

  /// The modules of ein's library in `dir`, sorted: `ein.optim`, ...
  static std::vector<std::string> libraryModules(const fs::path &dir) {
    std::vector<std::string> modules;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec))
      if (it->path().extension() == ".ein")
        modules.push_back("ein." + it->path().stem().string());
    std::sort(modules.begin(), modules.end());
    return modules;
  }

  /// `a, b, c`, or `none`.
  template <typename Range> static std::string joined(const Range &items) {
    if (items.begin() == items.end())
      return "none";
    return fmt::format("{}", fmt::join(items, ", "));
  }

  /// The file `import` names, or nullopt after an error at the import: a
  /// module of ein's library is a file of libraryDirectory(), any other
  /// one is relative to the importing file's directory.
  std::optional<std::string> modulePath(const Import &import,
                                        const std::string &importerPath) {
    unsigned length = static_cast<unsigned>(import.module.size());
    if (!isLibraryModule(import.module))
      return (fs::path(importerPath).parent_path() / moduleFile(import.module))
          .string();
    auto dir = libraryDirectory();
    if (!dir) {
      diags.error(import.loc,
                  fmt::format("cannot import '{}': {}", import.module,
                              dir.error().message),
                  length);
      return std::nullopt;
    }
    fs::path path = fs::path(*dir) / moduleFile(import.module.substr(4));
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      diags.error(import.loc,
                  fmt::format("no module '{}' in ein's library ({}); it has {}",
                              import.module, *dir,
                              joined(libraryModules(*dir))),
                  length);
      return std::nullopt;
    }
    return path.string();
  }

  bool resolveOne(Import &import, const std::string &importerPath) {
    auto located = modulePath(import, importerPath);
    if (!located)
      return false;
    std::string path = *located;
    std::string key = canonical(path);
    unsigned length = static_cast<unsigned>(import.module.size());
    for (size_t i = 0; i < stack.size(); ++i)
      if (stack[i].first == key) {
        std::string cycle;
        for (size_t j = i; j < stack.size(); ++j)
          cycle += fs::path(stack[j].second).filename().string() + " -> ";
        cycle += fs::path(path).filename().string();
        diags.error(import.loc, fmt::format("import cycle: {}", cycle), length);
        return false;
      }
    auto found = done.find(key);
    if (found == done.end()) {
      auto id = read(import, path);
      if (!id)
        return false;
      found = done.emplace(key, *id).first;
    }
    import.resolvedFile = found->second;
    for (auto &[name, loc] : import.names)
      if (!exported[found->second].count(name)) {
        const auto &functions = exported[found->second];
        diags.error(loc,
                    isLibraryModule(import.module)
                        ? fmt::format("'{}' is not a function of {}; it has {}",
                                      name, import.module, joined(functions))
                        : fmt::format("'{}' is not a function of {}", name,
                                      fs::path(path).filename().string()),
                    static_cast<unsigned>(name.size()));
        return false;
      }
    auto &mine = exported[import.loc.file];
    for (auto &[name, loc] : import.names)
      mine.insert(name);
    return true;
  }

  /// Reads and parses `path` and what it imports; its id, or nullopt after
  /// an error (at `import`).
  std::optional<unsigned> read(const Import &import, const std::string &path) {
    unsigned length = static_cast<unsigned>(import.module.size());
    auto fail = [&](const std::string &why) -> std::optional<unsigned> {
      diags.error(
          import.loc,
          fmt::format("cannot import '{}': {}: {}", import.module, path, why),
          length);
      return std::nullopt;
    };
    ErrorOr<std::string> text = readSourceText(path);
    if (!text)
      return fail(text.error().message);
    auto file = std::make_shared<SourceFile>();
    file->path = path;
    file->text = std::move(*text);
    file->id = nextId++;
    diags.addFile(file);
    root.importedFiles.push_back(file);
    size_t errorsBefore = diags.errorCount();
    Module module = parseModule(*file, diags);
    if (diags.errorCount() != errorsBefore)
      return std::nullopt;
    auto &mine = exported[file->id];
    for (auto &f : module.functions)
      mine.insert(f.name);
    if (!resolve(module, path))
      return std::nullopt;
    for (auto &d : module.dims)
      root.importedDims.push_back(std::move(d));
    for (auto &f : module.functions)
      root.importedFunctions.push_back(std::move(f));
    for (auto &i : module.imports)
      root.importedImports.push_back(std::move(i));
    return file->id;
  }
};

} // namespace

void resolveImports(Module &module, const SourceFile &file,
                    DiagnosticEngine &diags) {
  if (module.imports.empty())
    return;
  ImportResolver(module, diags).resolve(module, file.path);
}

ErrorOr<SourceFile> readSource(const std::string &path) {
  ErrorOr<std::string> text = readSourceText(path);
  if (!text)
    return Error::inFile(ErrorKind::Program, path, text.error().message);
  return SourceFile{path, std::move(*text)};
}

} // namespace ein
