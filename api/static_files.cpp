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

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
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
    std::ifstream in(entry.path(), std::ios::binary);
    auto content = std::make_shared<std::string>(std::istreambuf_iterator<char>(in),
                                                 std::istreambuf_iterator<char>());
    // Appended rather than `"/" + string`: GCC 12 at -O3 warns falsely (stringop-overflow)
    // on operator+(const char*, string&&).
    std::string url = "/";
    url += fs::relative(entry.path(), root).generic_string();
    File f;
    f.content_type = content_type_for(name);
    f.etag = "\"";
    f.etag.append(crypto::sha256_hex(*content), 0, 20).append("\"");
    // HTML names the other files, so it must be revalidated; the rest may be cached briefly.
    f.cache_control = ends_with(name, ".html") ? "no-cache" : "public, max-age=300";
    f.content = std::move(content);
    files_.emplace(std::move(url), std::move(f));
  }
  log::info("serving {} web panel files from {}", files_.size(), root);
}

std::optional<Response> StaticFiles::serve(const Request& request) const {
  if (request.method != Method::kGet && request.method != Method::kHead) return std::nullopt;
  std::string_view path = request.path == "/" ? std::string_view("/index.html") : request.path;
  auto it = files_.find(path);
  if (it == files_.end()) return std::nullopt;
  const File& f = it->second;
  Response r;
  r.content_type = f.content_type;
  r.set_header("ETag", f.etag);
  r.set_header("Cache-Control", f.cache_control);
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
