// Sends each shape through the PostgreSQL JDBC driver (PreparedStatement: $1 bound as ?).
import java.sql.*;
import java.nio.file.*;
import java.util.regex.*;
public class RunJdbc {
  public static void main(String[] a) throws Exception {
    String json = new String(Files.readAllBytes(Paths.get(a[0])));
    Connection c = DriverManager.getConnection("jdbc:postgresql://" + a[1] + ":" + a[2] + "/postgres", "bw_analyst", "");
    Matcher m = Pattern.compile("\\{\"name\": \"([^\"]+)\", \"sql\": \"((?:[^\"\\\\]|\\\\.)*)\", \"params\": \\[([^\\]]*)\\](, \"cells\": (\\d+))?(, \"consistent\": true)?\\}").matcher(json);
    while (m.find()) {
      String name = m.group(1), sql = m.group(2).replace("\\\"", "\"").replace("$1", "?");
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        if (!m.group(3).isEmpty()) ps.setInt(1, Integer.parseInt(m.group(3).trim()));
        int rows = 0; double total = Double.NaN, parts = 0;
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) { rows++; if (m.group(6) != null) { if (rs.getObject(1) == null) total = rs.getDouble(2); else parts += rs.getDouble(2); } }
        }
        int cells;
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM dx.last_release()")) { rs.next(); cells = rs.getInt(1); }
        String st = "ok", detail = rows + " rows, " + cells + " cells";
        if (m.group(5) != null && cells != Integer.parseInt(m.group(5))) { st = "wrong"; detail = cells + " cells"; }
        if (m.group(6) != null && (Double.isNaN(total) || Math.abs(total - parts) > 1e-6)) { st = "wrong"; detail = "total " + total + " != parts " + parts; }
        System.out.println(name + "\t" + st + "\t" + detail);
      } catch (SQLException e) { System.out.println(name + "\terror\t" + e.getSQLState() + " " + e.getMessage().split("\n")[0]); }
    }
  }
}
