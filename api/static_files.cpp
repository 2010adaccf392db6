// StaticFiles: an in-memory map from URL path to file bytes, content type and ETag.
#include "api/static_files.h"

#include "core/crypto.h"
#include "core/log.h"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace gpurent::http {
namespace {

constexpr std::uintmax_t kMaxFileSize = 16 * 1024 * 1024;

constexpr std::string_view kReleasePrefix = "/r/";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string etag_of(const std::string& content) {
  std::string etag = "\"";
  etag.append(crypto::sha256_hex(content), 0, 20).append("\"");
  return etag;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

}  // namespace

std::string_view StaticFiles::content_type_for(std::string_view name) {
  struct Entry {
    std::string_view ext, type;
  };
  static constexpr Entry kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
      {".webmanifest", "application/manifest+json"},
  };
  for (const auto& e : kTypes) {
    if (ends_with(name, e.ext)) return e.type;
  }
  return "application/octet-stream";
}

StaticFiles::StaticFiles(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    log::warn("web_root {} is not a folder; the web panel is not served", root);
    return;
  }
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const auto& entry = *it;
    std::string name = entry.path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (entry.is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (entry.is_symlink() || !entry.is_regular_file() || entry.file_size() > kMaxFileSize) {
      continue;
    }
    // One read of the known size: a character at a time cost every sanitizer-built server
    // start ~20 ms.
    std::ifstream in(entry.path(), std::ios::binary);
    auto content = std::make_shared<std::string>(entry.file_size(), '\0');
    in.read(content->data(), static_cast<std::streamsize>(content->size()));
    content->resize(static_cast<std::size_t>(in.gcount()));
    // Appended rather than `"/" + string`: GCC 12 at -O3 warns falsely (stringop-overflow)
    // on operator+(const char*, string&&).
    std::string url = "/";
    url += fs::relative(entry.path(), root).generic_string();
    File f;
    f.content_type = content_type_for(name);
    f.etag = etag_of(*content);
    f.content = std::move(content);
    files_.emplace(std::move(url), std::move(f));
  }
  // The release names every file but the HTML, which is rewritten to name the release.
  std::string digest_input;
  for (const auto& [url, f] : files_) {
    if (!ends_with(url, ".html")) digest_input.append(url).append(f.etag).push_back('\n');
  }
  release_ = crypto::sha256_hex(digest_input).substr(0, 12);
  for (auto& [url, f] : files_) {
    if (!ends_with(url, ".html")) continue;
    auto html = std::make_shared<std::string>(*f.content);
    for (const auto& [asset, unused] : files_) {
      if (ends_with(asset, ".html")) continue;
      replace_all(*html, "\"" + asset + "\"",
                  "\"" + std::string(kReleasePrefix) + release_ + asset + "\"");
    }
    f.etag = etag_of(*html);
    f.content = std::move(html);
  }
  log::info("serving {} web panel files from {} (release {})", files_.size(), root, release_);
}

std::optional<Response> StaticFiles::serve(const Request& request) const {
  if (request.method != Method::kGet && request.method != Method::kHead) return std::nullopt;
  std::string_view path = request.path == "/" ? std::string_view("/index.html") : request.path;
  std::string_view cache_control = "no-cache";
  if (path.substr(0, kReleasePrefix.size()) == kReleasePrefix) {
    auto rest = path.substr(kReleasePrefix.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    // Another release's name (a page loaded before a deploy) still gets today's file, but
    // never for long: only the current release's names are immutable.
    if (rest.substr(0, slash) == release_) cache_control = "public, max-age=31536000, immutable";
    path = rest.substr(slash);
  }
  auto it = files_.find(path);
  if (it == files_.end()) return std::nullopt;
  const File& f = it->second;
  Response r;
  r.content_type = f.content_type;
  r.set_header("ETag", f.etag);
  r.set_header("Cache-Control", std::string(cache_control));
  r.set_header("X-Content-Type-Options", "nosniff");
  if (ends_with(path, ".html")) {
    r.set_header("Content-Security-Policy",
                 "default-src 'self'; frame-ancestors 'none'; base-uri 'none'");
    r.set_header("X-Frame-Options", "DENY");
    r.set_header("Referrer-Policy", "same-origin");
  }
  if (request.header("If-None-Match") == f.etag) {
    r.status = 304;
    return r;
  }
  r.shared_body = f.content;
  return r;
}

}  // namespace gpurent::http
