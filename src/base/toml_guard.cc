#include "base/toml_guard.h"

#include <algorithm>

namespace tw {

namespace {

bool NonAscii(char c) { return static_cast<unsigned char>(c) >= 0x80; }

// What may open a key: a bare-key character or a quote.
bool StartsKey(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '"' || c == '\'';
}

// How many times `c` repeats from `i` on.
size_t RunOf(std::string_view s, size_t i, char c) {
  size_t n = 0;
  while (i + n < s.size() && s[i + n] == c) ++n;
  return n;
}

}  // namespace

Status CheckTomlText(std::string_view text, const std::string& path) {
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral } in = In::kCode;
  size_t line = 1, line_start = 0;
  std::string open;            // open value arrays and inline tables ('[' '{'): no table header inside
  bool in_key = true;          // where a key is read (before its '='): a dotted key's '.' may precede a quote
  bool in_token = false;       // inside a bare value (a number, a date, a word): nothing opens there
  bool line_has_code = false;  // a non-blank byte outside strings and comments on this line
  char last = '\n';             // the last such byte
  auto refuse = [&](size_t at, const char* why) {
    return InvalidArgument(path + ":" + std::to_string(line) + ":" + std::to_string(at - line_start + 1) +
                           ": " + why);
  };
  size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a byte order mark is allowed
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      if (in != In::kMultiBasic && in != In::kMultiLiteral) {
        line_has_code = false;
        in_token = false;
        in_key = open.empty() || open.back() == '{';  // a new line starts a key, except in an array
      }
      // Single-line strings and comments end here (an unclosed string is toml++'s error).
      if (in == In::kComment || in == In::kBasic || in == In::kLiteral) in = In::kCode;
      ++i;
      continue;
    }
    switch (in) {
      case In::kCode: {
        if (NonAscii(c))
          return refuse(i, "non-ASCII character outside a string or comment (TOML allows them only "
                           "inside quotes and after #)");
        if (c == '[' && open.empty() && !line_has_code) {
          // A table header: toml++ assumes (TOML_ASSERT_ASSUME; undefined behaviour where
          // asserts are off) that a key starts after "[" or "[[" and blanks; a value's array
          // opens after "=" on its key's line, so a line's first "[" outside values is a header.
          size_t j = i + 1 + (i + 1 < text.size() && text[i + 1] == '[');
          while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
          if (j < text.size() && text[j] != ']' && !StartsKey(text[j]))
            return refuse(j, "a table header must start with a key ([name] or [\"name\"])");
          i = j;
          line_has_code = true;
          in_key = true;  // the header's key, dotted perhaps
          last = '[';
          continue;
        }
        // A bare value runs to a terminator, and toml++ reads all of it as one token, asking of
        // each character whether it is whitespace: a quote, bracket or '=' inside ("5='é")
        // opens nothing.
        if (in_token && c != ' ' && c != '\t' && c != '\r' && c != ',' && c != ']' && c != '}' && c != '#') {
          ++i;
          continue;
        }
        in_token = false;
        if (!in_key && c != ' ' && c != '\t' && c != '\r' && c != '"' && c != '\'' && c != '[' &&
            c != ']' && c != '{' && c != '}' && c != ',' && c != '=' && c != '#') {
          in_token = true;
          last = '+';
          ++i;
          continue;
        }
        // A quote opens a string only where a key or value starts: first on its line, or after
        // = [ , { or, in a key, a dotted key's dot. Glued to a bare token ("1that'") it does not:
        // toml++ reads that token on to a terminator, asking of each character whether it is
        // whitespace, so what follows the quote is code. The same holds for a bracket glued to
        // one ("+[\"é": no array opens there) and for a dot in a value ("0.'é": a number's).
        const bool opens = !line_has_code || last == '=' || last == '[' || last == ',' || last == '{' ||
                           (last == '.' && in_key);
        const bool glued = (c == '[' || c == '{') && !opens;  // after a value or a bare token: no array
        if ((c == '[' || c == '{') && !glued) {
          open.push_back(c);
          in_key = c == '{';
        }
        if ((c == ']' || c == '}') && !open.empty()) open.pop_back();
        if (c == '=') in_key = false;
        if (c == ',') in_key = !open.empty() && open.back() == '{';
        if (c != ' ' && c != '\t' && c != '\r') {
          line_has_code = true;
          last = glued ? '+' : c;  // a bracket glued to a token is part of the token
        }
        if (c == '#') {
          in = In::kComment;
        } else if ((c == '"' || c == '\'') && opens) {
          const bool multi = RunOf(text, i, c) >= 3;
          in = c == '"' ? (multi ? In::kMultiBasic : In::kBasic) : (multi ? In::kMultiLiteral : In::kLiteral);
          i += multi ? 3 : 1;
          continue;
        }
        break;
      }
      case In::kComment:
        break;
      case In::kBasic:
        // The escaped byte is no delimiter (an escaped newline is toml++'s error).
        if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i;
        else if (c == '"') in = In::kCode;
        break;
      case In::kLiteral:
        if (c == '\'') in = In::kCode;
        break;
      case In::kMultiBasic:
      case In::kMultiLiteral: {
        const char quote = in == In::kMultiBasic ? '"' : '\'';
        if (c == quote) {
          // """ closes; up to two more quotes before it belong to the string (""""" at most).
          const size_t run = RunOf(text, i, quote);
          if (run >= 3) in = In::kCode;
          i += run >= 3 ? std::min<size_t>(run, 5) : run;
          continue;
        }
        if (c != '\\' || in == In::kMultiLiteral) break;
        // toml++ asks whether the byte after a backslash is whitespace; after a line-ending
        // backslash, it asks of every character up to the next one it keeps.
        size_t j = i + 1;
        if (j < text.size() && NonAscii(text[j]))
          return refuse(j, "a backslash followed by a non-ASCII character in a multi-line string "
                           "(no TOML escape; toml++ 3.3.0 mishandles it)");
        if (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n')) {
          for (; j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n');
               ++j) {
            if (text[j] == '\n') {
              ++line;
              line_start = j + 1;
            }
          }
          if (j < text.size() && NonAscii(text[j]))
            return refuse(j, "a non-ASCII character right after a line-ending backslash in a multi-line "
                             "string (toml++ 3.3.0 mishandles it; move the backslash after it)");
          i = j;
          continue;
        }
        i += 2;  // the escaped character: never a delimiter
        continue;
      }
    }
    ++i;
  }
  return Status::Ok();
}

}  // namespace tw
