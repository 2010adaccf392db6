// Serves the web panel's files from memory, loaded once at start-up from web_root.
#pragma once

#include "api/http_types.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace gpurent::http {

class StaticFiles {
 public:
  // Loads every regular file under root (no symlinks, no dotfiles). A missing root leaves
  // the set empty. Only loaded paths can ever be served, so no request path can reach
  // outside the root, whatever its dots, slashes or escapes.
  explicit StaticFiles(const std::string& root);

  // GET/HEAD of a loaded file ("/" means "/index.html"); nullopt when there is none.
  // Honours If-None-Match with 304. Every file is also served under the release's prefix
  // (/r/<release>/js/app.js), which the HTML files name in place of the plain paths: those
  // copies may be cached for a year, since a changed file makes a new release and a new
  // name. A module's relative imports (./pages/x.js) resolve under the same prefix, so a
  // browser never mixes the scripts of two releases. Plain paths and HTML are revalidated
  // on every use (no-cache, with an ETag).
  std::optional<Response> serve(const Request& request) const;

  std::size_t size() const { return files_.size(); }
  // A digest of every file other than HTML: changes whenever one of them does.
  const std::string& release() const { return release_; }

  // Content type for a file name, by extension.
  static std::string_view content_type_for(std::string_view name);

 private:
  struct File {
    std::shared_ptr<const std::string> content;
    std::string_view content_type;
    std::string etag;
  };
  std::map<std::string, File, std::less<>> files_;  // "/index.html" → file
  std::string release_;
};

}  // namespace gpurent::http
